#!/usr/bin/env node
// `npm run test:n8n`: both packages installed the way their users install them, then used.
//
// 1. n8n-nodes-paperlink, packed with `npm pack` in packages/n8n-nodes-paperlink (what a checkout
//    built with `npm run build` makes), then installed into a real n8n 2.41.1 on Node 24
//    (scripts/n8n-install.sh, cached) each way docs/n8n.md tells a builder, each in an n8n user
//    folder of its own:
//    a. `npm install <tarball>` in ~/.n8n/nodes (the route before the registry, and `npm install
//       n8n-nodes-paperlink` there after it): Template Get → Generate (PDF as binary) → Download with
//       `n8n execute`; then `n8n start` with published workflows, a Paperlink Trigger (subscribes, gets
//       document.generated with the PDF attached) and a Postcard Intake Trigger (202 for a valid
//       request, the service's error shape for malformed JSON), and the Paperlink API credential's
//       Test through n8n's REST API (a key lacking scopes is told which);
//    b. the tarball unpacked into a folder named by N8N_CUSTOM_EXTENSIONS: Template Get → Generate;
//    c. as n8n's community-package installer does it from the registry (community-packages.service.js,
//       downloadPackage: unpacked into ~/.n8n/nodes/node_modules/<name>, its dev, peer and optional
//       dependencies removed, then `npm install --ignore-scripts --install-strategy=shallow …` there),
//       on the same tarball: Template Get → Generate.
// 2. paperlink (the service), packed and installed from its tarball into an empty folder with this
//    machine's Node, then `paperlink serve` and one generate.
// Ends with "N passed, N failed".
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const { check, run, sleep, finish } = require('./checks');

const root = path.resolve(__dirname, '..');
/** Polls until `fn` gives a truthy value or the deadline passes (then undefined). */
async function until(fn, ms = 60_000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v || Date.now() > end) return v;
    await sleep(250);
  }
}
const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** `npm pack` of a folder into `dest`; the tarball's path and the files it holds. */
function pack(dir, dest) {
  const r = run('npm', ['pack', '--json', '--pack-destination', dest], { cwd: dir });
  if (r.status !== 0) throw new Error(`npm pack in ${dir} failed: ${r.stderr}`);
  const [info] = JSON.parse(r.stdout.slice(r.stdout.indexOf('[')));
  return { file: path.join(dest, info.filename), files: info.files.map((f) => f.path), size: info.size };
}

function startService(cli, dataDir, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--data-dir', dataDir], {
      env: { ...process.env, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/[^\s"]+)/i.exec(out) ?? /(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve({ child, url: m[1].replace(/\/+$/, '') });
    });
    child.on('exit', (code) => reject(new Error(`paperlink serve exited with ${code}: ${out}`)));
  });
}

const api = (service, key) => async (method, url, body) => {
  const res = await fetch(`${service.url}${url}`, {
    method,
    headers: { 'x-service-api-token': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json().catch(() => undefined) };
};

/** A loopback receiver for what the n8n workflows send back. */
async function receiver() {
  const got = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      try {
        got.push(JSON.parse(body));
      } catch {
        got.push(body);
      }
      res.end('ok');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { got, url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

/** A workflow's trigger status as n8n 2.x's publication stores it (what the editor shows), from n8n's SQLite database. */
function triggerStatus(userFolder, workflowId) {
  // the better-sqlite3 that runs on this Node (src/db/sqlite-module.ts)
  const Database = require(path.join(root, 'dist/src/db/sqlite-module.js')).default;
  const file = path.join(userFolder, '.n8n', 'database.sqlite');
  if (!fs.existsSync(file)) return undefined;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare('SELECT status, errorMessage FROM workflow_publication_trigger_status WHERE workflowId = ?')
      .get(workflowId);
  } catch {
    return undefined;
  } finally {
    db.close();
  }
}

/** The run `n8n execute` printed: notices, then "Execution was successful:", a rule, and the run as JSON. */
function executionOf(text) {
  const marker = text.indexOf('Execution was successful:');
  const start = marker < 0 ? -1 : text.indexOf('\n{', marker);
  try {
    return JSON.parse(text.slice(start, text.indexOf('\n}', start + 1) + 2));
  } catch {
    return undefined;
  }
}

/**
 * Route c: the tarball installed into `userFolder` as n8n's community-package installer installs a
 * package it fetched from the registry (community-packages.service.js, downloadPackage).
 */
function installAsN8nInstallerDoes(userFolder, tarball, PATH) {
  const nodesDir = path.join(userFolder, '.n8n', 'nodes');
  const packageDir = path.join(nodesDir, 'node_modules', 'n8n-nodes-paperlink');
  fs.mkdirSync(packageDir, { recursive: true });
  fs.writeFileSync(
    path.join(nodesDir, 'package.json'),
    JSON.stringify({ name: 'installed-nodes', private: true, dependencies: {} }),
  );
  const untar = run('tar', ['-xzf', tarball.file, '-C', packageDir, '--strip-components=1']);
  if (untar.status !== 0) throw new Error(`tar: ${untar.stderr}`);
  const manifestPath = path.join(packageDir, 'package.json');
  const { devDependencies, peerDependencies, optionalDependencies, ...manifest } = JSON.parse(
    fs.readFileSync(manifestPath, 'utf8'),
  );
  fs.writeFileSync(manifestPath, JSON.stringify(manifest, null, 2));
  const npmInstall = run(
    'npm',
    [
      'install',
      '--audit=false',
      '--fund=false',
      '--bin-links=false',
      '--install-strategy=shallow',
      '--ignore-scripts=true',
      '--package-lock=false',
    ],
    { cwd: packageDir, env: { ...process.env, PATH } },
  );
  check("n8n's installer's steps install the tarball", npmInstall.status === 0, npmInstall.stderr);
  const pulled = fs.existsSync(path.join(packageDir, 'node_modules'))
    ? fs.readdirSync(path.join(packageDir, 'node_modules')).filter((d) => !d.startsWith('.'))
    : [];
  check(
    'the n8n package pulls no runtime dependencies',
    pulled.length === 0 && !manifest.dependencies,
    `installed: ${pulled.join(', ')}`,
  );
  const nodesJson = JSON.parse(fs.readFileSync(path.join(nodesDir, 'package.json'), 'utf8'));
  nodesJson.dependencies['n8n-nodes-paperlink'] = manifest.version;
  fs.writeFileSync(path.join(nodesDir, 'package.json'), JSON.stringify(nodesJson, null, 2));
}

async function n8nPackage(work) {
  const install = spawnSync('bash', [path.join(__dirname, 'n8n-install.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (install.status !== 0) throw new Error('installing n8n failed (see above)');
  const [cache, nodeDir] = install.stdout.trim().split('\n').slice(-2);
  const node24 = path.join(nodeDir, 'bin/node');
  const n8nBin = path.join(cache, 'node_modules/n8n/bin/n8n');
  const PATH = `${path.dirname(node24)}:${process.env.PATH}`;

  // the docs name the field mapper's modes as this n8n's editor labels them
  const assets = path.join(cache, 'node_modules/n8n-editor-ui/dist/assets');
  const labels = [];
  for (const file of fs.readdirSync(assets).filter((f) => f.endsWith('.js'))) {
    const js = fs.readFileSync(path.join(assets, file), 'utf8');
    for (const mode of ['defineBelow', 'autoMapInputData']) {
      const m = new RegExp(`"resourceMapper\\.mappingMode\\.${mode}\\.name":\\s*[\`"]([^\`"]+)[\`"]`).exec(js);
      if (m && !labels.includes(m[1])) labels.push(m[1]);
    }
    if (labels.length === 2) break;
  }
  const nodeDoc = fs.readFileSync(path.join(root, 'docs/n8n/paperlink.md'), 'utf8');
  check(
    `the docs name the mapper's modes as n8n's editor does (${labels.join(', ')})`,
    labels.length === 2 && labels.every((l) => nodeDoc.includes(`**${l}**`)),
    `editor: ${JSON.stringify(labels)}`,
  );

  const tarball = pack(path.join(root, 'packages/n8n-nodes-paperlink'), work);
  check(
    'the n8n package holds its bundles and no build artefacts',
    tarball.files.includes('dist/nodes/Paperlink/Paperlink.node.js') &&
      !tarball.files.some((f) => /tsbuildinfo|\.ts$|node_modules/.test(f)),
    tarball.files.join('\n'),
  );

  // a. the route docs/n8n.md gives first: `npm install <tarball>` in ~/.n8n/nodes, with the npm of
  // n8n's own Node; the n8n-workflow peer is optional (n8n provides it), so npm fetches nothing else
  const userFolder = path.join(work, 'n8n');
  const nodesDir = path.join(userFolder, '.n8n', 'nodes');
  fs.mkdirSync(nodesDir, { recursive: true });
  const npmInstall = run('npm', ['install', '--no-audit', '--no-fund', tarball.file], {
    cwd: nodesDir,
    env: { ...process.env, PATH },
  });
  const pulled = fs.existsSync(path.join(nodesDir, 'node_modules'))
    ? fs.readdirSync(path.join(nodesDir, 'node_modules')).filter((d) => !d.startsWith('.'))
    : [];
  check(
    "npm install <tarball> in ~/.n8n/nodes works on n8n's Node 24 and pulls nothing else",
    npmInstall.status === 0 && pulled.join() === 'n8n-nodes-paperlink',
    `${npmInstall.stderr}\ninstalled: ${pulled.join(', ')}`,
  );

  // the service the nodes talk to (from the repository's build)
  const cli = path.join(root, 'dist/src/cli.js');
  const dataDir = path.join(work, 'paperlink');
  const key = run(process.execPath, [cli, 'keys', 'create', '--name', 'n8n', '--data-dir', dataDir]).stdout.trim();
  const postcardToken = run(process.execPath, [
    cli,
    'tokens',
    'create',
    '--kind',
    'postcard',
    '--name',
    'n8n',
    '--data-dir',
    dataDir,
  ]).stdout.trim();
  const service = await startService(cli, dataDir, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  const call = api(service, key);
  // a second service, as most run: it refuses to send events to a private address such as n8n's here
  const strictDir = path.join(work, 'strict-data');
  const strictKey = run(process.execPath, [
    cli,
    'keys',
    'create',
    '--name',
    'n8n',
    '--data-dir',
    strictDir,
  ]).stdout.trim();
  const strict = await startService(cli, strictDir);
  // a key that may only generate: the credential's Test must say what it lacks
  const narrowKey = run(process.execPath, [
    cli,
    'keys',
    'create',
    '--name',
    'generate only',
    '--scope',
    'generate',
    '--data-dir',
    dataDir,
  ]).stdout.trim();
  const back = await receiver();
  const n8nPort = await freePort();
  const env = {
    ...process.env,
    PATH,
    N8N_USER_FOLDER: userFolder,
    N8N_ENCRYPTION_KEY: 'paperlink-test-key',
    N8N_DIAGNOSTICS_ENABLED: 'false',
    N8N_PORT: String(n8nPort),
    N8N_HOST: '127.0.0.1',
    N8N_LISTEN_ADDRESS: '127.0.0.1',
    WEBHOOK_URL: `http://127.0.0.1:${n8nPort}/`,
  };
  delete env.N8N_RUNNERS_ENABLED;
  // n8n exits right after writing its output: into a pipe the end would be lost, into a file it is not
  const n8n = (args, extra = {}) => {
    const out = path.join(work, 'n8n-output.txt');
    const fd = fs.openSync(out, 'w');
    const r = spawnSync(node24, [n8nBin, ...args], {
      env: { ...env, ...extra },
      stdio: ['ignore', fd, fd],
      timeout: 300_000,
    });
    fs.closeSync(fd);
    return { status: r.status, error: r.error, stdout: fs.readFileSync(out, 'utf8') };
  };
  let server;
  try {
    const credentials = [
      { id: 'plcred000000001', name: 'Paperlink', type: 'paperlinkApi', data: { baseUrl: service.url, apiKey: key } },
      {
        id: 'plcred000000003',
        name: 'Paperlink (no private addresses)',
        type: 'paperlinkApi',
        data: { baseUrl: strict.url, apiKey: strictKey },
      },
      {
        id: 'plcred000000004',
        name: 'Paperlink (generate only)',
        type: 'paperlinkApi',
        data: { baseUrl: service.url, apiKey: narrowKey },
      },
      {
        id: 'plcred000000002',
        name: 'Postcards',
        type: 'paperlinkPostcardTokenApi',
        data: { token: postcardToken, intakeUrl: `${service.url}/postcards` },
      },
    ];
    const credFile = path.join(work, 'credentials.json');
    fs.writeFileSync(credFile, JSON.stringify(credentials));
    const imported = n8n(['import:credentials', `--input=${credFile}`]);
    check('n8n imports the Paperlink credentials', imported.status === 0, imported.stdout);

    const cred = { paperlinkApi: { id: 'plcred000000001', name: 'Paperlink' } };
    // the package's nodes are n8n-nodes-paperlink.*; from a custom extensions folder, CUSTOM.*
    const node = (id, name, x, parameters, extra = {}, pkg = 'n8n-nodes-paperlink') => ({
      id,
      name,
      type: `${pkg}.paperlink`,
      typeVersion: 1,
      position: [x, 0],
      parameters,
      credentials: cred,
      ...extra,
    });
    /** Start → Template Get → Generate, the nodes of package `pkg`: what every route runs. */
    const templateAndGenerate = (pkg) => [
      {
        id: 'a',
        name: 'Start',
        type: 'n8n-nodes-base.manualTrigger',
        typeVersion: 1,
        position: [0, 0],
        parameters: {},
      },
      node(
        'b',
        'Template',
        200,
        {
          resource: 'template',
          operation: 'get',
          templateId: { __rl: true, mode: 'id', value: 'tmpl_example_letter' },
        },
        {},
        pkg,
      ),
      node(
        'c',
        'Generate',
        400,
        {
          resource: 'document',
          operation: 'generate',
          templateId: { __rl: true, mode: 'id', value: '={{ $json.id }}' },
          mergeFields: {
            mappingMode: 'defineBelow',
            value: '={{ Object.fromEntries($json.variables.map(v => [v, "From n8n: " + v])) }}',
          },
          store: true,
          documentName: 'Made in a real n8n',
          shareByMagicLink: false,
          options: { returnBinary: true },
        },
        {},
        pkg,
      ),
    ];
    const generateConnections = {
      Start: { main: [[{ node: 'Template', type: 'main', index: 0 }]] },
      Template: { main: [[{ node: 'Generate', type: 'main', index: 0 }]] },
    };
    const workflows = [
      {
        id: 'plwf00000000001',
        name: 'Generate and download',
        active: false,
        settings: { executionOrder: 'v1' },
        connections: {
          ...generateConnections,
          Generate: { main: [[{ node: 'Download', type: 'main', index: 0 }]] },
        },
        nodes: [
          ...templateAndGenerate('n8n-nodes-paperlink'),
          node('d', 'Download', 600, {
            resource: 'document',
            operation: 'download',
            documentId: { __rl: true, mode: 'id', value: '={{ $json.document_id }}' },
            binaryPropertyName: 'file',
          }),
        ],
      },
      {
        id: 'plwf00000000002',
        name: 'On Paperlink events',
        active: false,
        settings: { executionOrder: 'v1' },
        connections: { Trigger: { main: [[{ node: 'Report', type: 'main', index: 0 }]] } },
        nodes: [
          {
            id: 'e',
            name: 'Trigger',
            type: 'n8n-nodes-paperlink.paperlinkTrigger',
            typeVersion: 1,
            position: [0, 0],
            webhookId: '5b0d1c0e-4a53-4f4e-9d43-0c5bd2a1e001',
            parameters: { events: ['document.generated'], options: { attachPdf: true } },
            credentials: cred,
          },
          {
            id: 'f',
            name: 'Report',
            type: 'n8n-nodes-base.httpRequest',
            typeVersion: 4.2,
            position: [200, 0],
            parameters: {
              method: 'POST',
              url: back.url,
              sendBody: true,
              specifyBody: 'json',
              jsonBody:
                '={{ JSON.stringify({ type: $json.type, document: $json.data.object.id, file: $binary.data ? $binary.data.fileName : null }) }}',
              options: {},
            },
          },
        ],
      },
      {
        id: 'plwf00000000003',
        name: 'Postcard intake',
        active: false,
        settings: { executionOrder: 'v1' },
        connections: {},
        nodes: [
          {
            id: 'g',
            name: 'Intake',
            type: 'n8n-nodes-paperlink.postcardIntakeTrigger',
            typeVersion: 1,
            position: [0, 0],
            webhookId: '5b0d1c0e-4a53-4f4e-9d43-0c5bd2a1e002',
            parameters: { path: 'postcards', templateIds: '' },
            credentials: { paperlinkPostcardTokenApi: { id: 'plcred000000002', name: 'Postcards' } },
          },
        ],
      },
      {
        id: 'plwf00000000004',
        name: 'Refused subscription',
        active: false,
        settings: { executionOrder: 'v1' },
        connections: {},
        nodes: [
          {
            id: 'h',
            name: 'Refused Trigger',
            type: 'n8n-nodes-paperlink.paperlinkTrigger',
            typeVersion: 1,
            position: [0, 0],
            webhookId: '5b0d1c0e-4a53-4f4e-9d43-0c5bd2a1e004',
            parameters: { events: ['document.generated'] },
            credentials: { paperlinkApi: { id: 'plcred000000003', name: 'Paperlink (no private addresses)' } },
          },
        ],
      },
    ];
    const wfFile = path.join(work, 'workflows.json');
    fs.writeFileSync(wfFile, JSON.stringify(workflows));
    const wf = n8n(['import:workflow', `--input=${wfFile}`]);
    check('n8n imports workflows with the three nodes', wf.status === 0, wf.stdout);

    const executed = n8n(['execute', '--id=plwf00000000001']);
    const text = executed.stdout;
    check('n8n loaded the package without errors', !/Failed to load package|Cannot find module/.test(text), text);
    const data = executionOf(text);
    check(
      'n8n execute runs generate and download',
      executed.status === 0 && data !== undefined,
      `status ${executed.status} ${executed.error ?? ''}\n${text}`,
    );
    const runData = data?.data?.resultData?.runData ?? data?.resultData?.runData;
    const generated = runData?.Generate?.[0]?.data?.main?.[0]?.[0];
    check(
      'the Generate node output the render',
      generated?.json?.status === 'completed' && /^doc_/.test(generated?.json?.document_id ?? ''),
      JSON.stringify(generated?.json ?? runData ?? data ?? null),
    );
    check(
      'the PDF came back as binary, named after the document',
      generated?.binary?.data?.mimeType === 'application/pdf' &&
        generated?.binary?.data?.fileName === 'Made in a real n8n.pdf',
      JSON.stringify(generated?.binary ?? null),
    );
    const downloaded = runData?.Download?.[0]?.data?.main?.[0]?.[0];
    check(
      'the Download node output the stored PDF',
      downloaded?.json?.id === generated?.json?.document_id && downloaded?.binary?.file?.mimeType === 'application/pdf',
      JSON.stringify(downloaded ?? null),
    );

    // b. and c.: the other routes docs/n8n.md gives, each in an n8n user folder of its own
    const otherRoute = (label, folder, extra, pkg) => {
      const routeEnv = { N8N_USER_FOLDER: folder, ...extra };
      const importedHere = n8n(['import:credentials', `--input=${credFile}`], routeEnv);
      const file = path.join(work, `workflow-${pkg}.json`);
      const workflow = { id: 'plwf00000000005', name: label, active: false, settings: { executionOrder: 'v1' } };
      fs.writeFileSync(
        file,
        JSON.stringify([{ ...workflow, connections: generateConnections, nodes: templateAndGenerate(pkg) }]),
      );
      const importedWorkflow = n8n(['import:workflow', `--input=${file}`], routeEnv);
      const ran = n8n(['execute', '--id=plwf00000000005'], routeEnv);
      const made = executionOf(ran.stdout)?.data?.resultData?.runData?.Generate?.[0]?.data?.main?.[0]?.[0];
      check(
        `${label}: n8n loads the nodes (${pkg}.paperlink) and Generate makes a document`,
        importedHere.status === 0 &&
          importedWorkflow.status === 0 &&
          made?.json?.status === 'completed' &&
          made?.binary?.data?.mimeType === 'application/pdf',
        `${importedHere.stdout}\n${importedWorkflow.stdout}\n${ran.stdout}`,
      );
    };
    const extensions = path.join(work, 'custom-extensions');
    fs.mkdirSync(extensions);
    const unpacked = run('tar', ['-xzf', tarball.file, '-C', extensions]);
    check('the tarball unpacks into a custom extensions folder', unpacked.status === 0, unpacked.stderr);
    otherRoute(
      'the tarball unpacked into N8N_CUSTOM_EXTENSIONS',
      path.join(work, 'n8n-custom'),
      { N8N_CUSTOM_EXTENSIONS: extensions },
      'CUSTOM',
    );
    installAsN8nInstallerDoes(path.join(work, 'n8n-installer'), tarball, PATH);
    otherRoute(
      "installed as n8n's community-package installer does",
      path.join(work, 'n8n-installer'),
      {},
      'n8n-nodes-paperlink',
    );

    for (const id of ['plwf00000000002', 'plwf00000000003', 'plwf00000000004']) {
      const published = n8n(['publish:workflow', `--id=${id}`]);
      check(`n8n publishes workflow ${id}`, published.status === 0, published.stdout);
    }
    const log = fs.openSync(path.join(work, 'n8n-start.txt'), 'w');
    server = spawn(node24, [n8nBin, 'start'], { env, stdio: ['ignore', log, log] });
    const up = await until(async () => (await fetch(`http://127.0.0.1:${n8nPort}/healthz/readiness`)).ok, 180_000);
    check('n8n starts with the package', up, fs.readFileSync(path.join(work, 'n8n-start.txt'), 'utf8'));
    // each node's codex file (what the node panel's search reads) was found
    const noCodex = fs
      .readFileSync(path.join(work, 'n8n-start.txt'), 'utf8')
      .split('\n')
      .filter((l) => /No codex available for: .*(paperlink|postcardIntake)/i.test(l));
    check('n8n found a codex file for every node of the package', noCodex.length === 0, noCodex.join('\n'));
    // the credential's Test as the editor runs it (POST /rest/credentials/test), signed in as the owner
    const rest = (url, body, cookie = '') =>
      fetch(`http://127.0.0.1:${n8nPort}/rest${url}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'browser-id': 'paperlink-test', cookie },
        body: JSON.stringify(body),
      });
    const owner = await rest('/owner/setup', {
      email: 'owner@example.com',
      firstName: 'Paperlink',
      lastName: 'Test',
      password: 'Paperlink-test-1',
    });
    const cookie = owner.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const credentialTest = async (id) => {
      const c = credentials.find((x) => x.id === id);
      const res = await rest(
        '/credentials/test',
        { credentials: { id, name: c.name, type: c.type, data: c.data } },
        cookie,
      );
      return (await res.json().catch(() => undefined))?.data;
    };
    const passed = await credentialTest('plcred000000001');
    check(
      "the Paperlink API credential's Test passes in n8n for a key with every scope",
      owner.ok && passed?.status === 'OK',
      `${owner.status} ${JSON.stringify(passed ?? null)}`,
    );
    const { ALL_SCOPES } = require(path.join(root, 'dist/src/keys/index.js'));
    const lacking = await credentialTest('plcred000000004');
    const said = String(lacking?.message ?? '');
    check(
      "the Paperlink API credential's Test in n8n names every scope a narrower key lacks",
      lacking?.status === 'Error' &&
        ALL_SCOPES.filter((s) => s !== 'generate').every((s) => said.includes(s)) &&
        !said.includes('generate'),
      JSON.stringify(lacking ?? null),
    );
    // what the editor shows for a trigger that failed to activate is the trigger's stored status:
    // it must carry the service's reason and what to do, not only the node's name
    const refused = await until(async () => triggerStatus(userFolder, 'plwf00000000004'), 60_000);
    check(
      "a trigger the service refused is shown with the service's reason and what to do",
      refused?.status === 'failed' &&
        /Paperlink refused to send events to/.test(refused.errorMessage ?? '') &&
        /WEBHOOK_ALLOW_PRIVATE/.test(refused.errorMessage ?? ''),
      `${JSON.stringify(refused ?? null)}\n${fs.readFileSync(path.join(work, 'n8n-start.txt'), 'utf8').slice(-4000)}`,
    );
    const hook = await until(
      async () =>
        (await call('GET', '/v1/webhooks')).body.data.find((h) =>
          h.url.startsWith(`http://127.0.0.1:${n8nPort}/webhook/`),
        ),
      60_000,
    );
    check(
      'the Paperlink Trigger subscribed when its workflow was published',
      hook?.events?.join() === 'document.generated',
      JSON.stringify((await call('GET', '/v1/webhooks')).body),
    );

    const made = await call('POST', '/v1/generate', {
      template_id: 'tmpl_example_letter',
      merge_parameters: Object.fromEntries(
        (await call('GET', '/v1/templates/tmpl_example_letter')).body.variables.map((v) => [v, 'x']),
      ),
      destinations: { inkit_storage: { name: 'Seen by n8n' } },
    });
    const reported = await until(async () => back.got.find((g) => g.document === made.body?.document_id), 60_000);
    check(
      'the Paperlink Trigger ran its workflow with the PDF attached',
      reported?.type === 'document.generated' && reported?.file === 'Seen by n8n.pdf',
      `${JSON.stringify(back.got)}\n${fs.readFileSync(path.join(work, 'n8n-start.txt'), 'utf8')}`,
    );

    const intake = `http://127.0.0.1:${n8nPort}/webhook/5b0d1c0e-4a53-4f4e-9d43-0c5bd2a1e002/postcards`;
    const sample = JSON.parse(fs.readFileSync(path.join(root, 'examples/postcard/sample.json'), 'utf8'));
    const ok = await fetch(intake, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_token: postcardToken, template_id: 'tmpl_example_postcard', ...sample }),
    });
    check(
      'the Postcard Intake Trigger answers 202 at /webhook/<id>/postcards',
      ok.status === 202,
      `${ok.status} ${await ok.text()}`,
    );
    const bad = await fetch(intake, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"first_name": ',
    });
    const badBody = await bad.json().catch(() => undefined);
    check(
      'malformed JSON gets the service error shape from n8n',
      bad.status === 400 && badBody?.error?.code === 'malformed_json',
      `${bad.status} ${JSON.stringify(badBody)}`,
    );
  } finally {
    server?.kill('SIGTERM');
    if (server) await new Promise((r) => (server.exitCode !== null ? r() : server.once('exit', r)));
    service.child.kill('SIGTERM');
    strict.child.kill('SIGTERM');
    back.close();
  }
}

async function servicePackage(work) {
  const tarball = pack(root, work);
  const stray = tarball.files.filter((f) => /tsbuildinfo|^dist\/nodes\/|\.ts$/.test(f) && !/\.d\.ts$/.test(f));
  check(
    'the service package holds the CLI and no build artefacts, sources or n8n nodes',
    tarball.files.includes('dist/src/cli.js') && stray.length === 0,
    stray.join('\n'),
  );
  const folder = path.join(work, 'service-user');
  fs.mkdirSync(folder);
  fs.writeFileSync(path.join(folder, 'package.json'), JSON.stringify({ name: 'service-user', private: true }));
  console.log(
    '     (installing the service tarball with its dependencies; better-sqlite3 builds from source, about a minute, unless scripts/prebuilt.js kept a build)',
  );
  const installed = run('npm', ['install', '--no-audit', '--no-fund', tarball.file], { cwd: folder });
  check(
    `npm install of the service tarball works on Node ${process.version}`,
    installed.status === 0,
    installed.stderr,
  );
  check(
    'no dependency of the service asks for another Node',
    !/EBADENGINE/.test(installed.stderr),
    installed.stderr
      .split('\n')
      .filter((l) => /EBADENGINE/.test(l))
      .join('\n'),
  );
  typesCompile(folder);
  const cli = path.join(folder, 'node_modules/paperlink/dist/src/cli.js');
  const dataDir = path.join(folder, 'data');
  const key = run(process.execPath, [cli, 'keys', 'create', '--name', 'first', '--data-dir', dataDir]).stdout.trim();
  const service = await startService(cli, dataDir);
  try {
    const call = api(service, key);
    const variables = (await call('GET', '/v1/templates/tmpl_example_letter')).body?.variables ?? [];
    const made = await call('POST', '/v1/generate', {
      template_id: 'tmpl_example_letter',
      merge_parameters: Object.fromEntries(variables.map((v) => [v, 'installed'])),
      destinations: { inkit_storage: {} },
    });
    check(
      'the installed `paperlink serve` generates a document',
      made.status === 201 && made.body?.status === 'completed',
      JSON.stringify(made),
    );
  } finally {
    service.child.kill('SIGTERM');
  }
}

/**
 * The installed package's type declarations, imported from every entry point by a new TypeScript
 * project with `strict` on and skipLibCheck off: a CommonJS one (module node16) and an ES module
 * one (module nodenext), with this repository's TypeScript and @types/node as an engineer would add them.
 */
function typesCompile(folder) {
  const dev = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).devDependencies;
  const added = run(
    'npm',
    ['install', '--no-audit', '--no-fund', `typescript@${dev.typescript}`, `@types/node@${dev['@types/node']}`],
    { cwd: folder },
  );
  if (added.status !== 0) return check('TypeScript installs beside the service', false, added.stderr);
  const entries = [
    'paperlink',
    ...['client', 'worker', 'activities', 'workflows', 'plugin', 'children'].map((e) => `paperlink/workflows/${e}`),
  ];
  const source =
    entries.map((e, i) => `import * as entry${i} from '${e}';`).join('\n') +
    `\nexport const entries = [${entries.map((_, i) => `entry${i}`).join(', ')}];\n`;
  for (const [module, file] of [
    ['node16', 'commonjs.ts'],
    ['nodenext', 'esm.mts'],
  ]) {
    fs.writeFileSync(path.join(folder, file), source);
    fs.writeFileSync(
      path.join(folder, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'es2022', module, strict: true, skipLibCheck: false, noEmit: true },
        files: [file],
      }),
    );
    const tsc = run(process.execPath, [path.join(folder, 'node_modules/typescript/bin/tsc'), '-p', folder]);
    check(
      `the package's type declarations compile in a new ${module} project (strict, no skipLibCheck)`,
      tsc.status === 0,
      tsc.stdout + tsc.stderr,
    );
  }
}

async function main() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-packages-'));
  try {
    await n8nPackage(work).catch((err) =>
      check('the n8n package run completed', false, err instanceof Error ? err.stack : String(err)),
    );
    await servicePackage(work).catch((err) =>
      check('the service package run completed', false, err instanceof Error ? err.stack : String(err)),
    );
  } finally {
    if (!process.env.KEEP) fs.rmSync(work, { recursive: true, force: true });
    else console.log('kept', work);
  }
}

main().finally(finish);
