#!/usr/bin/env node
// `npm run bench`: every figure beside its baseline, measured in the same run on this machine.
'use strict';
const os = require('node:os');

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

async function main() {
  const only = process.argv.slice(2);
  const suites = [
    ['render', require('./render')],
    ['service', require('./service')],
    ['views', require('./views')],
    ['sharing', require('./sharing')],
    ['postcards', require('./postcards')],
    ['scale', require('./scale')],
    ['webhooks', require('./webhooks')],
    ['temporal', require('./temporal')],
    // minutes of load under faults: only when asked for by name
    ['faults', require('./faults'), 'by name'],
  ];
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  lines.push(
    `## ${new Date().toISOString().slice(0, 10)} — ${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`,
  );
  for (const [name, suite, byName] of suites) {
    if (only.length ? !only.includes(name) : byName) continue;
    process.stderr.write(`${name}…\n`);
    await suite.run(report);
  }
  console.log(lines.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
