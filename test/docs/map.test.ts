/**
 * CONTRIBUTING.md's "Where is it" map cannot drift from the code: every operation a route declares
 * (its `operationId`, as /openapi.json lists it) has a row naming the file that declares it, and
 * every row names an operation that exists, in the file where it is.
 */
import fs from 'node:fs';
import path from 'node:path';
import { root } from '../support/fixtures';

const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');

/** Each operationId declared in src/, with the file that declares it. */
function declared(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const files = fs
    .readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.posix.join('src', f.split(path.sep).join('/')));
  for (const file of files)
    for (const m of read(file).matchAll(/operationId: '([A-Za-z]+)'/g))
      found.set(m[1], [...(found.get(m[1]) ?? []), file]);
  return found;
}

/** The map's rows: `| \`operationId\` | \`METHOD /path\` | \`file\` |`. */
function mapped(): Map<string, string> {
  const text = read('CONTRIBUTING.md');
  const section = text.slice(text.indexOf('## Where is it'), text.indexOf('\n## ', text.indexOf('## Where is it') + 1));
  const rows = new Map<string, string>();
  for (const m of section.matchAll(/^\| `([A-Za-z]+)` \| `[A-Z]+ [^`]+` \| `([^`]+)` \|$/gm)) rows.set(m[1], m[2]);
  return rows;
}

describe("CONTRIBUTING's map from an operation to its file", () => {
  it('names, for every operation, the one file that declares it', () => {
    const operations = declared();
    const rows = mapped();
    // the scan finds the routes (a broken pattern would pass everything)
    expect(operations.size).toBeGreaterThan(30);
    for (const [operation, files] of operations) {
      expect({ operation, files }).toEqual({ operation, files: [files[0]] });
      expect({ operation, file: rows.get(operation) }).toEqual({ operation, file: files[0] });
    }
    for (const operation of rows.keys())
      expect({ operation, declared: operations.has(operation) }).toEqual({ operation, declared: true });
  });

  it('names only files that exist', () => {
    const text = read('CONTRIBUTING.md');
    const section = text.slice(text.indexOf('## Where is it'), text.indexOf('## How CI is laid out'));
    const named = [...section.matchAll(/`((?:src|workflows)\/[A-Za-z0-9_./-]+\.ts)`/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThan(30);
    for (const file of named)
      expect({ file, exists: fs.existsSync(path.join(root, file)) }).toEqual({ file, exists: true });
  });
});
