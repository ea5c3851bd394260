package termtest

import (
	"flag"
	"runtime"
	"strconv"
)

// ParallelAtLeast raises -test.parallel to n when the command line did
// not set it and GOMAXPROCS (its default) is lower. A TestMain calls it
// before m.Run, for a package whose parallel tests wait on containers and
// processes far more than they compute: two at a time on two cores
// leaves the cores mostly idle. It parses the command line (m.Run then
// does not again).
func ParallelAtLeast(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set && runtime.GOMAXPROCS(0) < n {
		_ = f.Value.Set(strconv.Itoa(n))
	}
}
