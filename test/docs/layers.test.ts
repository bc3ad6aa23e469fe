/**
 * The layers of src/ (and workflows/, Temporal's side) that CONTRIBUTING.md's "Layers" describes, held: every import (a type's too)
 * goes to the same layer or one below, no file imports itself round a cycle, and the resources'
 * cores import one another in one direction only. A new import that runs upward fails here with
 * the file and the import named.
 */
import fs from 'node:fs';
import path from 'node:path';
import { root } from '../support/fixtures';

/** Each layer's files; a file is in the first layer with a pattern that matches it (so `http`, a resource's outermost part, comes before `core`). ORDER ranks them. */
const LAYERS: [string, RegExp[]][] = [
  [
    'foundation',
    [
      /^src\/(errors|clock|ids|secrets|guards|html|log|paths|pagination|outage|metrics|tracing|config)\.ts$/,
      // the flows' retry and timing policies: a leaf (it imports nothing), kept in src/flows so that
      // Temporal's workflow sandbox bundles it with the flows
      /^src\/flows\/policies\.ts$/,
    ],
  ],
  ['infrastructure', [/^src\/(db|storage|mail|net|jobs|events)\//, /^src\/(history|idempotency)\.ts$/]],
  // a resource's routes, schemas, pages and web-app section are its outermost part (the `http` layer)
  ['http', [/^src\/[a-z]+\/(routes\.ts|routes\/|schemas\.ts|pages\.ts|web\.ts)/, /^src\/(http|generate|web)\//]],
  ['core', [/^src\/(templates|keys|links|documents|postcards|webhooks|admin)\//]],
  // what runs the flows: the embedded engine and Temporal's (the workflows, the client that starts them)
  ['flows', [/^src\/(flows|engine)\//, /^workflows\/(workflows|common|children|client|codec)\.ts$/]],
  ['service', [/^src\/service\.ts$/]],
  // Paperlink in a Temporal worker: its activities on the service, the plugin, the worker
  ['temporal', [/^workflows\/(activities|plugin|worker)\.ts$/]],
  ['entry', [/^src\/(app|serve|cli|doctor|batch|index)\.ts$/, /^src\/cli\//]],
];
/** The http layer sits above the service it is given (routes take the composed service). */
const ORDER = ['foundation', 'infrastructure', 'core', 'flows', 'service', 'temporal', 'http', 'entry'];

function layerOf(file: string): string {
  const found = LAYERS.find(([, patterns]) => patterns.some((p) => p.test(file)));
  if (!found) throw new Error(`${file} is in no layer: add it to LAYERS (and CONTRIBUTING.md's "Layers")`);
  return found[0];
}

const files = ['src', 'workflows'].flatMap((dir) =>
  fs
    .readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.posix.join(dir, f.split(path.sep).join('/'))),
);

/** What each file imports of src/ and workflows/, statically, by `export … from`, by `import()` or in a type's `import('…')`. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'(\.[^']*)'/gms),
    ...text.matchAll(/^\s*import\s+'(\.[^']*)'/gm),
    ...text.matchAll(/import\(\s*'(\.[^']*)'\s*\)/g),
  ].map((m) => m[1]);
  return specs.map((spec) => {
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
    const target = [`${base}.ts`, `${base}/index.ts`, base].find((f) => files.includes(f));
    if (!target) throw new Error(`${file} imports ${spec}, which is no file of src/ or workflows/`);
    return target;
  });
}

const graph = new Map(files.map((f) => [f, [...new Set(importsOf(f))]]));

/** The strongly connected components with more than one member (Tarjan). */
function cycles(g: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the layers of src/ and workflows/', () => {
  it('places every file in a layer, and reads imports of every kind', () => {
    expect(files.length).toBeGreaterThan(150);
    for (const f of files) expect(ORDER).toContain(layerOf(f));
    // the scan sees static, re-exported, type and dynamic imports (a broken pattern would pass everything)
    expect(graph.get('src/app.ts')).toContain('src/service.ts');
    expect(graph.get('src/index.ts')!.length).toBeGreaterThan(3);
    expect([...graph.values()].flat().length).toBeGreaterThan(600);
  });

  it("has the flows' policies import nothing (what lets every layer use them)", () => {
    expect(graph.get('src/flows/policies.ts')).toEqual([]);
  });

  it('imports only from the same layer or one below', () => {
    const upward: string[] = [];
    for (const [file, imports] of graph)
      for (const target of imports)
        if (ORDER.indexOf(layerOf(target)) > ORDER.indexOf(layerOf(file)))
          upward.push(`${file} (${layerOf(file)}) imports ${target} (${layerOf(target)})`);
    expect(upward).toEqual([]);
  });

  it('has no cycle of imports, a type import counted', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("has the resources' cores import one another in one direction only", () => {
    const folder = (f: string) => f.split('/')[1];
    const cores = new Map<string, string[]>();
    for (const [file, imports] of graph) {
      if (layerOf(file) !== 'core') continue;
      const to = imports.filter((t) => layerOf(t) === 'core' && folder(t) !== folder(file)).map(folder);
      cores.set(folder(file), [...new Set([...(cores.get(folder(file)) ?? []), ...to])]);
    }
    expect(cores.get('documents')).toContain('links');
    expect(cycles(cores)).toEqual([]);
  });
});
