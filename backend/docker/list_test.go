package docker

import (
	"testing"

	"github.com/termgate/termgate/sessions"
)

func TestListShowsOnlyRunningLabelledInstancesButNotSelf(t *testing.T) {
	needEngine(t)
	t.Parallel()
	labelled, labelledID := runContainer(t, "--label", runLabel)
	self, selfID := runContainer(t, "--label", runLabel)
	plain, _ := runContainer(t)
	paused, _ := runContainer(t, "--label", runLabel)
	dockerCLI(t, "pause", paused)

	ctx := testContext(t) // after the containers: starting them takes long on a loaded host
	list, err := newBackend(t, Config{Label: runLabel, SelfID: selfID}).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]sessions.Instance{}
	for _, in := range list {
		seen[in.Name] = in
	}
	if got, ok := seen[labelled]; !ok || got.ID != labelledID {
		t.Errorf("List lacks the running labelled container %s: %+v", labelled, list)
	}
	for _, name := range []string{self, plain, paused} {
		if _, ok := seen[name]; ok {
			t.Errorf("List shows %s (own, unlabelled or paused)", name)
		}
	}
}
