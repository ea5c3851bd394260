package main

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// dfTool: the mounts of /proc/mounts with their size, use and free
// space, in KiB (-h: human units).
func dfTool(_ context.Context, tio toolIO, args []string) error {
	human := len(args) > 0 && strings.Contains(args[0], "h")
	f, err := os.Open(procRoot + "/mounts")
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(tio.out, "%-20s %10s %10s %10s %4s %s\n", "Filesystem", "Size", "Used", "Avail", "Use%", "Mounted on")
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		var st unix.Statfs_t
		if unix.Statfs(fields[1], &st) != nil || st.Blocks == 0 {
			continue // proc, sysfs and the like: no blocks
		}
		bs := uint64(st.Bsize)
		size, free, avail := st.Blocks*bs, st.Bfree*bs, st.Bavail*bs
		used := size - free
		pct := 0
		if used+avail > 0 {
			pct = int((used*100 + used + avail - 1) / (used + avail))
		}
		fmt.Fprintf(tio.out, "%-20s %10s %10s %10s %3d%% %s\n", fields[0], sizeStr(size, human), sizeStr(used, human), sizeStr(avail, human), pct, fields[1])
	}
	return s.Err()
}

// duTool: the disk use of each argument (default .), summed over its
// tree without crossing into other filesystems; -s for the totals only,
// -h for human units. Otherwise each directory is listed.
func duTool(ctx context.Context, tio toolIO, args []string) error {
	var summary, human bool
	var paths []string
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' {
			summary = summary || strings.Contains(a, "s")
			human = human || strings.Contains(a, "h")
			continue
		}
		paths = append(paths, a)
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		root := p
		if !filepath.IsAbs(root) {
			root = filepath.Join(tio.dir, p)
		}
		var dev uint64
		if st, err := os.Lstat(root); err == nil {
			dev = devOf(st)
		}
		sums := map[string]uint64{}
		var dirs []string
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				fmt.Fprintf(tio.err, "du: %v\n", err)
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if d.IsDir() && path != root && devOf(info) != dev {
				return filepath.SkipDir
			}
			if d.IsDir() {
				dirs = append(dirs, path)
			}
			n := blocksOf(info)
			for q := path; ; q = filepath.Dir(q) {
				sums[q] += n
				if q == root || q == filepath.Dir(q) {
					break
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		show := func(path string) {
			name := p + strings.TrimPrefix(path, root)
			fmt.Fprintf(tio.out, "%s\t%s\n", sizeStr(sums[path], human), name)
		}
		if !summary {
			for i := len(dirs) - 1; i > 0; i-- {
				show(dirs[i])
			}
		}
		show(root)
	}
	return nil
}

func devOf(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

func blocksOf(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Blocks) * 512
	}
	return uint64(info.Size())
}

// sizeStr is n bytes in KiB, or with -h in the largest unit under 1024.
func sizeStr(n uint64, human bool) string {
	if !human {
		return fmt.Sprint((n + 1023) / 1024)
	}
	units := []string{"B", "K", "M", "G", "T", "P"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 || f >= 10 {
		return fmt.Sprintf("%.0f%s", f, units[i])
	}
	return fmt.Sprintf("%.1f%s", f, units[i])
}
