/**
 * A drop-in request whose messages cannot be taken as they are: the gateway answers it with a
 * 400 in the provider's error shape, naming `path` (where in the request body) and `reason`,
 * and writes nothing.
 */
export class DropInInputError extends Error {
  override readonly name = 'DropInInputError';

  constructor(
    /** Where in the request body, e.g. `['messages', 3, 'tool_calls', 0, 'id']`. */
    readonly path: readonly (string | number)[],
    /** What is wrong there, in words a client developer can act on. */
    readonly reason: string,
  ) {
    super(`${formatPath(path)}: ${reason}`);
  }
}

/** `messages[3].tool_calls[0].id`, as a client developer would write it. */
export function formatPath(path: readonly (string | number)[]): string {
  return path.reduce<string>(
    (out, key) => (typeof key === 'number' ? `${out}[${key}]` : out === '' ? key : `${out}.${key}`),
    '',
  );
}
