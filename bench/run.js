#!/usr/bin/env node
// `npm run bench`: every figure beside its baseline, measured in the same run on this machine.
// `npm run bench -- NAME…` runs the benches named; a name it does not know is refused (exit 2)
// before anything runs, so a typo never passes for a run that measured nothing.
'use strict';
const os = require('node:os');

/** Every bench by name: its module (loaded only when it runs) and what it measures; `byName`: not in a full run. */
const SUITES = [
  {
    name: 'render',
    file: './render',
    says: 'rendering on one thread in this process, beside Typst and the floors of pdf-lib, Chromium, LibreOffice',
  },
  {
    name: 'service',
    file: './service',
    says: 'POST /v1/generate at 1, 4, 16 clients, beside the rate of one render thread',
  },
  { name: 'views', file: './views', says: "Magic Link views under 50 clients, beside a bare Node server's" },
  {
    name: 'sharing',
    file: './sharing',
    says: 'a Magic Link viewing: a watermark drawn, a page as an image, beside their floors',
  },
  { name: 'postcards', file: './postcards', says: "postcard intake under 50 clients, beside a bare Node server's" },
  {
    name: 'scale',
    file: './scale',
    says: 'views and intake on 1 and 2 processes, SQLite and PostgreSQL; then the held-work curve (held)',
  },
  {
    name: 'webhooks',
    file: './webhooks',
    says: 'generate and views beside a backlog of 30,000 deliveries to a dead endpoint',
  },
  {
    name: 'temporal',
    file: './temporal',
    says: 'generate and intake through a real Temporal server, beside the embedded engine',
  },
  {
    name: 'held',
    file: './held',
    says: 'the held-work curve alone: start, RSS, idle CPU and an expiry burst with up to 1,000,000 links waiting',
    byName: true,
  },
  {
    name: 'faults',
    file: './faults',
    says: 'a mixed load under five faults, on Temporal and on the embedded engine (minutes)',
    byName: true,
  },
];

function help() {
  const width = Math.max(...SUITES.map((s) => s.name.length));
  return [
    'Usage: npm run bench [-- NAME…]',
    '',
    'Without a name: every bench but those marked "by name only". With names: those benches, in this order.',
    '',
    ...SUITES.map((s) => `  ${s.name.padEnd(width)}  ${s.says}${s.byName ? ' [by name only]' : ''}`),
    '',
    'Results go to standard output as Markdown: a new run goes at the top of docs/benchmarks-history.md, its figures into the Now tables of BENCHMARKS.md.',
    '',
  ].join('\n');
}

const lines = [];
const report = {
  section: (title) => lines.push('', `### ${title}`, ''),
  line: (text) => lines.push(text),
  table: (head, rows) => {
    lines.push(`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`);
    for (const r of rows) lines.push(`| ${r.join(' | ')} |`);
    lines.push('');
  },
};

async function main(args) {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(help());
    return 0;
  }
  const unknown = args.filter((a) => !SUITES.some((s) => s.name === a));
  if (unknown.length) {
    process.stderr.write(
      `bench: unknown bench ${unknown.map((u) => JSON.stringify(u)).join(', ')}; nothing was run.\n\n${help()}`,
    );
    return 2;
  }
  const chosen = SUITES.filter((s) => (args.length ? args.includes(s.name) : !s.byName));
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  lines.push(
    `## ${new Date().toISOString().slice(0, 10)} — ${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`,
  );
  for (const suite of chosen) {
    process.stderr.write(`${suite.name}…\n`);
    await require(suite.file).run(report);
  }
  console.log(lines.join('\n'));
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}

module.exports = { SUITES };
