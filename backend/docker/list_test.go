package docker

import (
	"strings"
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

// TestListDescribesInstances: a listed container carries its image, its
// status and only its termgate.* labels (issue 22 item 7: the page's list);
// the orchestrator's labels, which may hold configuration, are left out.
func TestListDescribesInstances(t *testing.T) {
	needEngine(t)
	t.Parallel()
	name, _ := runContainer(t, "--label", runLabel, "--label", "termgate.owner=ops", "--label", "traefik.secret=hunter2")
	ctx := testContext(t)
	list, err := newBackend(t, Config{Label: runLabel}).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		if in.Name != name {
			continue
		}
		l := in.Listing
		if l == nil || l.Image != testImage || !strings.HasPrefix(l.Status, "Up") || l.Labels["termgate.owner"] != "ops" || l.Labels["traefik.secret"] != "" {
			t.Errorf("listing of %s = %+v, want image %s, status Up…, termgate.owner=ops and no traefik.secret", name, l, testImage)
		}
		return
	}
	t.Fatalf("List lacks %s: %+v", name, list)
}
