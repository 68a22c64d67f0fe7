import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

/** A pino logger at `info` whose every line, as written, lands in `lines`. */
export function capturedLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}
