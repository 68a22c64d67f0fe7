// Preloaded (`--import`) into every process a local stack starts (children.ts). The parent holds the
// write end of the child's stdin and never writes to it; when it dies without cleaning up (SIGKILL, a crash),
// the pipe closes and the child shuts itself down instead of living on as an orphan.
// unref: the pipe alone must not keep a child alive after its own shutdown.
const shutDown = () => {
  process.kill(process.pid, 'SIGTERM');
  setTimeout(() => process.exit(70), 10_000).unref();
};
process.stdin.on('end', shutDown);
process.stdin.on('error', shutDown);
process.stdin.resume();
process.stdin.unref();
