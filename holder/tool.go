package holder

// ToolReady is the line a tool subcommand (termgate-holder sftp, dial)
// writes on stdout before its stream: the gateway then knows the binary
// ran (and, for dial, connected), so a directory where it cannot run
// (noexec) is told apart from a tool that failed, before any of the
// stream's bytes are read.
const ToolReady = "termgate-holder ready"
