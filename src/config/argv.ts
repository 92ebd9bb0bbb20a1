// Splits a command line into argv the way a POSIX shell splits words, without
// running a shell: whitespace separates words; 'single quotes' keep everything
// literally; "double quotes" keep everything but \" \\ \$ \` (and drop \newline);
// a backslash outside quotes escapes the next character. Nothing is expanded:
// $VAR, ~, globs, |, ; and & are ordinary characters, because no shell runs.

export class ArgvSyntaxError extends Error {
  override readonly name = "ArgvSyntaxError";
}

const SPACE = new Set([" ", "\t", "\n", "\r"]);
const DOUBLE_QUOTE_ESCAPES = new Set(['"', "\\", "$", "`"]);

/** "npx -y 'a b'" → ["npx", "-y", "a b"]; throws ArgvSyntaxError on an unclosed quote or a trailing backslash. */
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  let word = "";
  // A word exists once any of its characters (or an empty pair of quotes) was seen.
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const ch = line[i] as string;
    if (SPACE.has(ch)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      i++;
    } else if (ch === "'") {
      const end = line.indexOf("'", i + 1);
      if (end === -1) throw new ArgvSyntaxError(`unclosed single quote at character ${i + 1}`);
      word += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (ch === '"') {
      let j = i + 1;
      for (;;) {
        if (j >= line.length) throw new ArgvSyntaxError(`unclosed double quote at character ${i + 1}`);
        const c = line[j] as string;
        if (c === '"') break;
        if (c === "\\" && j + 1 < line.length) {
          const next = line[j + 1] as string;
          if (next === "\n") {
            j += 2;
            continue;
          }
          if (DOUBLE_QUOTE_ESCAPES.has(next)) {
            word += next;
            j += 2;
            continue;
          }
        }
        word += c;
        j++;
      }
      inWord = true;
      i = j + 1;
    } else if (ch === "\\") {
      if (i + 1 >= line.length) throw new ArgvSyntaxError("trailing backslash");
      const next = line[i + 1] as string;
      // Backslash-newline continues the line; it adds nothing to the word.
      if (next !== "\n") {
        word += next;
        inWord = true;
      }
      i += 2;
    } else {
      word += ch;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}
