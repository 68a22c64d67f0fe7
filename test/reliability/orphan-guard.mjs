// Preloaded (`--import`) into every worker process the reliability tests spawn. The test process
// holds the write end of the worker's stdin; when that process dies without running its cleanup
// (a crashed vitest fork, a SIGKILLed run), the pipe closes and the worker exits instead of
// living on as an orphan that keeps taking jobs. Nothing is ever written to the pipe.
process.stdin.on('end', () => process.exit(70));
process.stdin.on('error', () => process.exit(70));
process.stdin.resume();
