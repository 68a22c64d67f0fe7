/**
 * A shell command line split into simple commands and their words: enough to read `rm x`, `mv a b`
 * or `npm test` out of what an agent ran, not a shell. Quotes group words; `&&`, `||`, `;`, `|`,
 * `&` and line breaks separate commands; redirections (`> f`, `>> f`, `2>&1`) come out as their own
 * words so callers can see what was written.
 */

/** One simple command: its words, and the files it redirects output into. */
export interface SimpleCommand {
  words: string[];
  writesTo: string[];
}

const OPERATOR = /^(?:&&|\|\||[;|&\n])$/;

/** Words and operators of a command line, quotes removed. Heredoc bodies are skipped. */
function tokens(line: string): string[] {
  const out: string[] = [];
  let word = '';
  let inWord = false;
  let heredoc: string | null = null;
  const flush = (): void => {
    if (inWord) out.push(word);
    word = '';
    inWord = false;
  };
  for (let index = 0; index < line.length; index += 1) {
    const char = line[index]!;
    if (char === "'" || char === '"') {
      const end = line.indexOf(char, index + 1);
      if (end === -1) {
        word += line.slice(index + 1);
        inWord = true;
        break;
      }
      word += line.slice(index + 1, end);
      inWord = true;
      index = end;
    } else if (char === '\\' && index + 1 < line.length) {
      word += line[index + 1];
      inWord = true;
      index += 1;
    } else if (char === '\n') {
      flush();
      out.push('\n');
      if (heredoc !== null) {
        // The body runs to a line holding only the delimiter: none of it is shell. Scanned line by
        // line from here, so many heredocs cost no more than their text.
        let lineStart = index + 1;
        for (;;) {
          const lineEnd = line.indexOf('\n', lineStart);
          const bodyLine = line.slice(lineStart, lineEnd === -1 ? line.length : lineEnd);
          if (lineEnd === -1) {
            index = line.length;
            break;
          }
          if (bodyLine.trim() === heredoc) {
            index = lineEnd - 1; // the delimiter line's break ends the command, next round
            break;
          }
          lineStart = lineEnd + 1;
        }
        heredoc = null;
      }
    } else if (/\s/.test(char)) {
      flush();
    } else if (line.startsWith('<<', index)) {
      flush();
      const match = /^<<-?\s*(['"]?)([\w.-]+)\1/.exec(line.slice(index));
      if (match) {
        heredoc = match[2]!;
        index += match[0].length - 1;
      } else index += 1;
    } else if (line.startsWith('&&', index) || line.startsWith('||', index)) {
      flush();
      out.push(line.slice(index, index + 2));
      index += 1;
    } else if (char === ';' || char === '|' || char === '&') {
      flush();
      out.push(char);
    } else if (char === '>') {
      // `2>&1`, `>/dev/null`, `>> file`: the redirect becomes its own word.
      const fd = /^\d$/.test(word) ? word : '';
      if (fd !== '') {
        word = '';
        inWord = false;
      }
      flush();
      const append = line[index + 1] === '>';
      if (append) index += 1;
      const duplicate = /^&(?:\d+|-)/.exec(line.slice(index + 1));
      if (duplicate) {
        out.push(`${fd}>${duplicate[0]}`);
        index += duplicate[0].length;
      } else out.push(`${fd}${append ? '>>' : '>'}`);
    } else {
      word += char;
      inWord = true;
    }
  }
  flush();
  return out;
}

/** `line` as simple commands, in order. Subshell parentheses and `$(…)` are not looked into. */
export function simpleCommands(line: string): SimpleCommand[] {
  const commands: SimpleCommand[] = [];
  let current: SimpleCommand = { words: [], writesTo: [] };
  const all = tokens(line);
  for (let index = 0; index < all.length; index += 1) {
    const token = all[index]!;
    if (OPERATOR.test(token)) {
      if (current.words.length > 0 || current.writesTo.length > 0) commands.push(current);
      current = { words: [], writesTo: [] };
    } else if (/^\d?>>?$/.test(token)) {
      const target = all[index + 1];
      if (target !== undefined && !OPERATOR.test(target)) {
        if (!target.startsWith('&') && target !== '/dev/null' && !/^\d?>/.test(target)) {
          current.writesTo.push(target);
        }
        index += 1;
      }
    } else if (!/^\d?>&/.test(token)) {
      current.words.push(token);
    }
  }
  if (current.words.length > 0 || current.writesTo.length > 0) commands.push(current);
  return commands;
}
