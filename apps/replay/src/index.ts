// For in-process use (tests, other tools): the replay and its pure parts.
export { parseTranscriptText } from './formats/detect';
export { probeRetention } from './probes/retention';
export { renderHtml } from './report/html';
export { renderTable } from './report/table';
export { runTotals, type ReplayReport, type RunReport } from './report/model';
export { parseOptions, USAGE, UsageError, type ReplayOptions } from './options';
export { runReplay, type ReplayResult } from './replay';
export { TranscriptError, type Transcript, type TranscriptFormat } from './transcript';
