/**
 * The barrier around the programs that print untrusted templates (Chromium for HTML, LibreOffice
 * for Word): bubblewrap (`bwrap`, Debian's package bubblewrap, the sandbox Flatpak uses) runs them
 * in namespaces of their own, as an unprivileged user, with
 * - no network at all (a network namespace with only its own loopback: no local service, no
 *   metadata address, no internet);
 * - no view of the server's files: only the system's programs and libraries (/usr, read-only), the
 *   font configuration, the program's own files, and one temporary folder of its own; never the
 *   data dir, the project, /etc/passwd, /root or /proc of other processes;
 * - none of the server's environment (its secrets): the environment is cleared;
 * - its own process ids, and it dies with the process that started it.
 *
 * TEMPLATE_SANDBOX: `auto` (the default) uses bubblewrap where it works and otherwise runs the
 * programs as they are, saying so at start; `required` refuses to print without it; `off` never
 * uses it. See docs/templates.md ("What a template can and cannot do").
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UnavailableError, ValidationError } from '../errors';

export type SandboxMode = 'auto' | 'required' | 'off';

/** A command to run inside the sandbox. */
export interface SandboxSpec {
  /** Folders the program may read and write (its temporary folder). */
  writable: string[];
  /** Files or folders it may read besides the system's (the program itself when it is not under /usr). */
  readable?: string[];
  /** Its environment (the server's own is not passed on). */
  env?: Record<string, string>;
}

const BWRAP = ['/usr/bin/bwrap', '/bin/bwrap'];

function bwrapPath(): string | undefined {
  return BWRAP.find((p) => fs.existsSync(p));
}

function mode(): SandboxMode {
  const given = (process.env.TEMPLATE_SANDBOX ?? 'auto').trim().toLowerCase();
  return given === 'required' || given === 'off' ? given : 'auto';
}

/** The arguments that make bwrap run `command args` as the spec allows. */
function bwrapArgs(spec: SandboxSpec): string[] {
  const args = [
    '--unshare-all',
    '--unshare-user',
    '--uid',
    '65534',
    '--gid',
    '65534',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  // merged-/usr systems have these as links into /usr, others as folders: either way, read-only
  for (const p of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/etc/fonts', '/etc/ld.so.cache', '/etc/alternatives'])
    args.push('--ro-bind-try', p, p);
  // LibreOffice's configuration (Debian links parts of its installation to /etc/libreoffice), fonts' caches
  for (const p of ['/etc/libreoffice', '/var/cache/fontconfig']) args.push('--ro-bind-try', p, p);
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  for (const p of new Set(spec.readable)) if (!p.startsWith('/usr/')) args.push('--ro-bind', p, p);
  for (const p of spec.writable) args.push('--bind', p, p);
  const env = { PATH: '/usr/bin:/bin', HOME: spec.writable[0] ?? '/tmp', LANG: 'C.UTF-8', ...spec.env };
  for (const [k, v] of Object.entries(env)) args.push('--setenv', k, v);
  return args;
}

let works: boolean | undefined;

/** Whether bubblewrap is here and may make namespaces on this machine (tried once). */
export function sandboxAvailable(): boolean {
  if (works !== undefined) return works;
  const bwrap = bwrapPath();
  works =
    bwrap !== undefined &&
    spawnSync(bwrap, [...bwrapArgs({ writable: [] }), '--', '/bin/true'], { stdio: 'ignore', timeout: 10_000 })
      .status === 0;
  return works;
}

/** Whether the printing programs run in the sandbox: `auto` where it works, `required` always (or fails), `off` never. */
export function sandboxInUse(): boolean {
  const m = mode();
  if (m === 'off') return false;
  if (sandboxAvailable()) return true;
  if (m === 'required')
    throw new ValidationError(
      SANDBOX_MISSING,
      [{ field: 'format', message: 'HTML and Word templates need the sandbox here', code: 'format_unavailable' }],
      'format_unavailable',
    );
  return false;
}

const SANDBOX_MISSING =
  'This server prints HTML and Word templates only in a sandbox (TEMPLATE_SANDBOX=required), and bubblewrap does not work here. Install it (Debian: apt-get install bubblewrap) and allow user namespaces, or set TEMPLATE_SANDBOX=auto, then restart.';

/** What to say at start about the barrier around Chromium and LibreOffice. */
export function sandboxStatus(): string {
  if (mode() === 'off') return 'sandbox: off (TEMPLATE_SANDBOX=off): Chromium and LibreOffice print without one.';
  if (sandboxAvailable()) return 'sandbox: Chromium and LibreOffice print in bubblewrap (no network, no server files).';
  if (mode() === 'required') return `sandbox: missing, so HTML and Word templates are refused. ${SANDBOX_MISSING}`;
  return 'sandbox: NONE. Chromium and LibreOffice print without one, because bubblewrap does not work here: install it (Debian: apt-get install bubblewrap), or set TEMPLATE_SANDBOX=required to refuse to print without one.';
}

/**
 * The answer when Chromium or LibreOffice would not start (`503 renderer_unavailable`): the client
 * is told to try again later and what the operator sets; the program's own words stay in `cause`,
 * for the server's log and `paperlink doctor`, not for the client.
 */
export function notStarted(program: 'Chromium' | 'LibreOffice', cause: unknown): UnavailableError {
  const [format, setting] =
    program === 'Chromium' ? ['HTML', 'CHROMIUM_PATH'] : ['Word', 'LIBREOFFICE_PATH and LIBREOFFICE_PYTHON'];
  const where = sandboxInUse() ? ' in its sandbox (bubblewrap)' : '';
  return new UnavailableError(
    'renderer_unavailable',
    `${program} did not start on this server${where}, so ${format} templates cannot be printed now; try again later. Operators: \`npx paperlink doctor\` says why and what to fix (${setting}, TEMPLATE_SANDBOX); the server's log has ${program}'s own words.`,
    RESTART_AFTER_SECONDS,
    { cause },
  );
}

/** What a client told `renderer_unavailable` waits before trying again. */
const RESTART_AFTER_SECONDS = 30;

/** `command args`, wrapped in the sandbox when it is in use; as given when it is not. */
export function sandboxed(command: string, args: string[], spec: SandboxSpec): { command: string; args: string[] } {
  if (!sandboxInUse()) return { command, args };
  return { command: bwrapPath()!, args: [...bwrapArgs(spec), '--', command, ...args] };
}

/**
 * A program's own files, to be readable in the sandbox: its folder, or only itself when it sits
 * directly in a shared folder such as the temporary one (where @sparticuz/chromium unpacks).
 */
export function programFiles(executable: string): string {
  const real = fs.realpathSync(executable);
  const dir = path.dirname(real);
  return dir === fs.realpathSync(os.tmpdir()) ? real : dir;
}

/** Quotes a word for a POSIX shell. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
