/**
 * One SQLite data dir, one server: each server runs background work (webhook deliveries, postcard
 * renders, link lifecycles) that assumes it alone owns the data dir, and at start it takes over
 * what a dead server left half-done. `paperlink serve` holds `paperlink.lock` in the data dir while
 * it runs; a second one refuses to start and names the holder. A lock whose process is gone (a
 * crash, kill -9) is taken over. CLI commands (keys, templates, …) do not take it: SQLite lets
 * them read and write beside the server.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StartupError } from '../errors';

export class DataDirInUseError extends StartupError {
  constructor(message: string) {
    super('data_dir_in_use', message);
  }
}

interface Holder {
  pid: number;
  host: string;
  started_at: string;
}

/** Whether a process of this machine with that id runs (one of another user's counts). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function alive(holder: Holder): boolean {
  // on another machine (a shared folder) there is no way to tell: it counts as alive
  return holder.host !== os.hostname() || processAlive(holder.pid);
}

/** Takes the data dir's lock for this process, or throws DataDirInUseError naming the holder. Returns the release. */
export function lockDataDir(dir: string): () => void {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'paperlink.lock');
  const mine = JSON.stringify({
    pid: process.pid,
    host: os.hostname(),
    started_at: new Date().toISOString(),
  } satisfies Holder);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, mine, { flag: 'wx' });
      return () => {
        try {
          if (fs.readFileSync(file, 'utf8') === mine) fs.unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let raw = '';
    let holder: Holder | undefined;
    try {
      raw = fs.readFileSync(file, 'utf8');
      holder = JSON.parse(raw) as Holder;
    } catch {
      holder = undefined; // half-written or unreadable: its writer died mid-write
    }
    if (holder && typeof holder.pid === 'number' && alive(holder)) {
      throw new DataDirInUseError(
        `Another Paperlink server (process ${holder.pid} on ${holder.host}, started ${holder.started_at}) is using the data dir ${path.resolve(dir)}. One SQLite data dir serves one server: stop that one first, or give this one another --data-dir. If that process is gone, delete ${file}.`,
      );
    }
    // the holder is gone: take its lock over (only if no one else has in the meantime)
    try {
      if (fs.readFileSync(file, 'utf8') === raw) fs.unlinkSync(file);
    } catch {
      // someone else removed it first: try again
    }
  }
  throw new DataDirInUseError(
    `Could not take the lock ${file}: other servers keep starting on ${path.resolve(dir)}. Start one at a time.`,
  );
}
