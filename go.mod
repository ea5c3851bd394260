module github.com/termgate/termgate

go 1.26.8
