/**
 * Files a shell command obviously touches: the few commands whose meaning does not depend on
 * anything but their words (`rm`, `mv`, `cp`, `touch`, `sed -i`, `cat`, `git rm`, output
 * redirection, an `apply_patch` heredoc). Modest on purpose: a word that may not be a path
 * (a glob, a variable, a flag's value) is left out rather than guessed at.
 */
import { fileOpsInPatchBody, isCodexPatch, type LedgerFileOp } from './patch';
import { simpleCommands, type SimpleCommand } from './shell-words';

/** A word that names a file as written: no globs, expansions or substitutions, not a URL. */
function isPlainPath(word: string): boolean {
  return word !== '' && word !== '-' && !/[*?$`{}[\]()<>]/.test(word) && !/^[a-z][\w+.-]*:\/\//i.test(word);
}

/** The command's arguments without flags (`-rf`, `--force`), after an optional `--`. */
function operands(args: readonly string[], flagsWithValue: readonly string[] = []): string[] {
  const out: string[] = [];
  let flagsDone = false;
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]!;
    if (!flagsDone && arg === '--') flagsDone = true;
    else if (!flagsDone && arg.startsWith('-') && arg !== '-') {
      if (flagsWithValue.includes(arg)) index += 1;
    } else out.push(arg);
  }
  return out;
}

const op = (kind: LedgerFileOp['kind'], paths: readonly string[]): LedgerFileOp[] =>
  paths.filter(isPlainPath).map((path) => ({ kind, path }));

/** Ops of `mv`/`cp`-like commands: two operands only (with more, the last is a directory). */
function moveOrCopy(args: readonly string[], sourceKind: LedgerFileOp['kind']): LedgerFileOp[] {
  const paths = operands(args, ['-t', '--target-directory', '-S', '--suffix']);
  if (paths.length !== 2) return [];
  return [...op(sourceKind, [paths[0]!]), ...op('created', [paths[1]!])];
}

/** `sed -i[SUFFIX] [-e script]… file…`: the script is the first operand unless `-e`/`-f` gave it. */
function sedInPlace(args: readonly string[]): LedgerFileOp[] {
  if (!args.some((arg) => /^-[a-zA-Z]*i/.test(arg) || arg.startsWith('--in-place'))) return [];
  const scriptGiven = args.some((arg) => ['-e', '-f', '--expression', '--file'].includes(arg));
  const paths = operands(args, ['-e', '-f', '--expression', '--file', '-l', '--line-length']);
  return op('modified', scriptGiven ? paths : paths.slice(1));
}

/** `head -n 20 f`, `tail -20 f`: numeric flag values are not files. */
function readers(args: readonly string[]): LedgerFileOp[] {
  return op('read', operands(args, ['-n', '-c', '--lines', '--bytes']));
}

function opsOfSimpleCommand(command: SimpleCommand): LedgerFileOp[] {
  let words = command.words;
  // `sudo rm x`, `env A=1 touch y`, `time cat z`: look past the wrappers and assignments.
  while (
    words.length > 0 &&
    (/^(?:sudo|env|time|command|nohup|exec)$/.test(words[0]!) || /^\w+=/.test(words[0]!))
  ) {
    words = words.slice(1);
  }
  const [name = '', ...args] = words;
  const written = op('modified', command.writesTo);
  const program = name.split('/').at(-1)!;
  switch (program) {
    case 'rm':
    case 'unlink':
      return [...op('deleted', operands(args)), ...written];
    case 'mv':
      return [...moveOrCopy(args, 'deleted'), ...written];
    case 'cp':
      return [...moveOrCopy(args, 'read'), ...written];
    case 'touch':
      return [...op('created', operands(args, ['-d', '-t', '-r', '--reference', '--date'])), ...written];
    case 'sed':
      return [...sedInPlace(args), ...written];
    case 'tee':
      return op('modified', operands(args));
    case 'cat':
    case 'head':
    case 'tail':
    case 'less':
    case 'more':
      return [...readers(args), ...written];
    case 'git':
      if (args[0] === 'rm') return op('deleted', operands(args.slice(1)));
      if (args[0] === 'mv') return moveOrCopy(args.slice(1), 'deleted');
      return written;
    default:
      return written;
  }
}

/**
 * The files a shell command line touches, in order. A patch carried by the command (Codex's
 * `apply_patch <<'EOF'` heredoc, `git apply` of a diff) counts by its own headers.
 */
export function fileOpsOfShellCommand(line: string): LedgerFileOp[] {
  if (/\bapply_patch\b/.test(line) && isCodexPatch(line)) return fileOpsInPatchBody(line);
  if (/\b(?:git apply|patch)\b/.test(line)) {
    const patched = fileOpsInPatchBody(line);
    if (patched.length > 0) return patched;
  }
  return simpleCommands(line).flatMap(opsOfSimpleCommand);
}
