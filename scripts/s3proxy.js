'use strict';
/**
 * A throwaway S3-compatible server: s3proxy (scripts/s3proxy-install.sh keeps its jars in
 * ~/.cache) over a temporary folder, on a free port, with one fixed identity; stopped and the folder
 * removed after. The tests (test/setup/servers.ts) and the bench use it.
 */
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { freePort } = require('./throwaway-pg');

const VERSION = process.env.S3PROXY_VERSION || '4.1.0';
const ACCESS_KEY = 'paperlink-test';
const SECRET_KEY = 'paperlink-test-secret';

/** Where the jars are; undefined (with the reason) when they have not been fetched. */
function s3proxyJars() {
  const dir = path.join(os.homedir(), '.cache', 'paperlink-s3proxy', VERSION);
  if (!fs.existsSync(path.join(dir, '.complete')))
    return { reason: `s3proxy ${VERSION} is not in ${dir}: run bash scripts/s3proxy-install.sh (Maven and Java 17)` };
  return { lib: path.join(dir, 'lib') };
}

/** Any HTTP answer (anonymous requests get 403) means it is up. */
function answers(endpoint) {
  return new Promise((resolve) => {
    const req = http.get(endpoint, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.setTimeout(1000, () => req.destroy());
  });
}

/** Starts s3proxy; resolves with its endpoint, credentials and what stopS3() needs. */
async function startS3() {
  const { lib, reason } = s3proxyJars();
  if (!lib) throw new Error(reason);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-s3-'));
  fs.mkdirSync(path.join(dir, 'data'));
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  fs.writeFileSync(
    path.join(dir, 's3proxy.conf'),
    [
      `s3proxy.endpoint=${endpoint}`,
      's3proxy.authorization=aws-v2-or-v4',
      `s3proxy.identity=${ACCESS_KEY}`,
      `s3proxy.credential=${SECRET_KEY}`,
      'jclouds.provider=filesystem-nio2',
      `jclouds.filesystem.basedir=${path.join(dir, 'data')}`,
    ].join('\n'),
  );
  const server = { endpoint, accessKey: ACCESS_KEY, secretKey: SECRET_KEY, pid: undefined, dir };
  try {
    await runS3(server);
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return server;
}

/** Runs s3proxy over a server's folder and port (again, after a stop: what it held is kept); resolves once it answers. */
async function runS3(server) {
  const { lib, reason } = s3proxyJars();
  if (!lib) throw new Error(reason);
  const { dir, endpoint } = server;
  const log = fs.openSync(path.join(dir, 's3proxy.log'), 'a');
  const child = spawn(
    'java',
    [
      '-Xmx256m',
      '-XX:TieredStopAtLevel=1',
      '-DLOG_LEVEL=warn',
      '-cp',
      path.join(lib, '*'),
      'org.gaul.s3proxy.Main',
      '--properties',
      path.join(dir, 's3proxy.conf'),
    ],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  let exited = null;
  child.once('exit', (code) => (exited = code));
  for (let i = 0; i < 300; i++) {
    if (exited !== null) break;
    if (await answers(endpoint)) {
      child.unref();
      server.pid = child.pid;
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  const tail = fs.readFileSync(path.join(dir, 's3proxy.log'), 'utf8').slice(-2000);
  throw new Error(`s3proxy did not start (${exited === null ? 'no answer in 30 s' : `exit ${exited}`}):\n${tail}`);
}

function stopS3(server) {
  pauseS3(server);
  fs.rmSync(server.dir, { recursive: true, force: true });
}

/** Stops s3proxy and keeps its folder, so that runS3(server) starts it again with what it held (an outage, for the bench). */
function pauseS3(server) {
  try {
    process.kill(server.pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

module.exports = { startS3, stopS3, runS3, pauseS3, s3proxyJars };
