/**
 * Hyphenation by language: where a word may break, from the TeX patterns of the `hyphen` package
 * (Liang's algorithm). Asked only for a word that does not fit at the end of a line, so a page
 * costs one lookup per line at most; the answers are kept per language.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The offsets (UTF-16) inside `word` where it may break with a hyphen added; ascending. */
export type Hyphenate = (word: string) => number[];

/** U+00AD: where a word may break; drawn only when it breaks there. */
export const SOFT_HYPHEN = '\u00ad';
// one folder per language the package knows: `en` (American), `en-gb`, `de` (1996 spelling), `de-ch-1901`…
const languagesDir = path.dirname(require.resolve('hyphen/package.json'));
/** Answers kept per language before they are dropped: a word is ~100 bytes. */
const MAX_WORDS = 20_000;
const byLanguage = new Map<string, Hyphenate | null>();
const byPatterns = new Map<string, Hyphenate>();

/**
 * The hyphenation of a BCP 47 language (`en`, `en-GB`, `de-CH`): its own patterns, or those of the
 * language without its last subtag (`de-CH` → `de`); `en` is American English, `de` the 1996
 * German spelling. Undefined when there are none (then words break only at soft hyphens).
 */
export function hyphenationFor(lang: string): Hyphenate | undefined {
  const tag = lang.toLowerCase();
  let found = byLanguage.get(tag);
  if (found === undefined) {
    found = null;
    for (let name = tag; name; name = name.includes('-') ? name.replace(/-[^-]*$/, '') : '') {
      if (!/^[a-z0-9-]+$/.test(name) || !fs.existsSync(path.join(languagesDir, name, 'index.js'))) continue;
      found = byPatterns.get(name) ?? hyphenator(name);
      byPatterns.set(name, found);
      break;
    }
    byLanguage.set(tag, found);
  }
  return found ?? undefined;
}

function hyphenator(name: string): Hyphenate {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { hyphenateSync } = require(path.join(languagesDir, name)) as {
    hyphenateSync: (text: string, options: { hyphenChar: string }) => string;
  };
  const known = new Map<string, number[]>();
  return (word) => {
    let points = known.get(word);
    if (!points) {
      points = [];
      const marked = hyphenateSync(word, { hyphenChar: SOFT_HYPHEN });
      let at = 0;
      for (const ch of marked) {
        if (ch === SOFT_HYPHEN) points.push(at);
        else at += ch.length;
      }
      // at least two letters stay on each side, and the word comes back as it went in
      if (marked.replaceAll(SOFT_HYPHEN, '') !== word) points = [];
      else points = points.filter((p) => p >= 2 && word.length - p >= 2);
      if (known.size >= MAX_WORDS) known.clear();
      known.set(word, points);
    }
    return points;
  };
}
