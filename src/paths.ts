import fs from 'node:fs';
import path from 'node:path';

let root: string | undefined;

/** The folder of Paperlink's package.json: examples and static files are found from here, built or not. */
export function packageRoot(): string {
  if (root) return root;
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json')) || !fs.existsSync(path.join(dir, 'examples'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('cannot find the Paperlink package folder');
    dir = up;
  }
  return (root = dir);
}
