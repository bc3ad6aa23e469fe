/**
 * Which Chromium prints HTML templates, and the program itself behind a distribution's launcher.
 *
 * Chromium is looked for in this order: CHROMIUM_PATH; the system's, which the distribution keeps
 * patched (Debian's `chromium-headless-shell`, then Debian's and Ubuntu's `chromium` or
 * `chromium-browser`, Google's `google-chrome`); the one inside the npm package
 * `@sparticuz/chromium` (an optional dependency, so `npm install` brings it).
 * docs/html-templates.md says so.
 *
 * Distributions install a shell script where the browser is expected (Debian's `/usr/bin/chromium`
 * reads `/etc/chromium.d/`, adds its own flags and runs `/usr/lib/chromium/chromium`). The script
 * needs files the sandbox does not give it, and adds flags Paperlink does not want (GPU
 * rasterisation, extensions), so Paperlink starts the program the script would start: the same
 * browser, with Paperlink's flags alone, in the sandbox or out of it. (Ubuntu's snap cannot be
 * looked behind: its browser runs only inside the snap's confinement; set CHROMIUM_PATH to another.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { ValidationError } from '../errors';

const SYSTEM = [
  // Debian's chromium-headless-shell: the same Chromium built as a printing program, at half the
  // desktop build's CPU a document (no browser window's processes: docs/html-templates.md)
  '/usr/lib/chromium/chromium-headless-shell',
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
];

/** Whether a file is a program itself (an ELF executable), not a script that starts one. */
function isProgram(file: string): boolean {
  let fd: number | undefined;
  try {
    fs.accessSync(file, fs.constants.X_OK);
    fd = fs.openSync(file, 'r');
    const magic = Buffer.alloc(4);
    return fs.readSync(fd, magic, 0, 4, 0) === 4 && magic.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  } catch {
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Where distributions put the browser their launcher starts, besides the places its name gives (programBehind). */
const DISTRIBUTIONS = [
  '/usr/lib/chromium/chromium', // Debian, Arch
  '/usr/lib/chromium/chrome', // Alpine
  '/usr/lib64/chromium-browser/chromium-browser', // Fedora
];

/**
 * The browser program a launcher script starts: `chrome` beside it (Google's), or
 * `/usr/lib{,64}/<name>/<name>` (Debian's `/usr/bin/chromium` starts `/usr/lib/chromium/chromium`),
 * and for the system's own launchers (`system`) the other places distributions use. Only a script
 * is looked behind: a program, or a link to one (a snap's link to `snap`, which starts the
 * browser by the link's name), is started as given; so is a script behind which none is found.
 */
export function programBehind(launcher: string, system = false): string {
  const real = fs.realpathSync(launcher);
  if (isProgram(real)) return launcher;
  const base = path.basename(real);
  const candidates = [
    path.join(path.dirname(real), 'chrome'),
    `/usr/lib/${base}/${base}`,
    `/usr/lib/chromium/${base}`, // Debian's chromium-headless-shell
    `/usr/lib64/${base}/${base}`,
  ];
  return [...candidates, ...(system ? DISTRIBUTIONS : [])].find(isProgram) ?? real;
}

/** Where Chromium is (the program itself, see programBehind), or undefined when this server has none. */
export async function chromiumPath(): Promise<string | undefined> {
  const given = process.env.CHROMIUM_PATH;
  if (given) return fs.existsSync(given) ? programBehind(given) : undefined;
  const system = SYSTEM.find((p) => fs.existsSync(p));
  if (system) return programBehind(system, true);
  try {
    const packaged = (await import('@sparticuz/chromium')).default;
    return await packaged.executablePath();
  } catch {
    return undefined;
  }
}

/** Chromium's path, or `422 format_unavailable` saying how to install it. */
export async function requireChromium(): Promise<string> {
  const found = await chromiumPath();
  if (found) return found;
  throw new ValidationError(
    CHROMIUM_MISSING,
    [{ field: 'format', message: 'HTML templates need Chromium', code: 'format_unavailable' }],
    'format_unavailable',
  );
}

export const CHROMIUM_MISSING =
  'HTML templates are printed by Chromium, which this server does not have. Install it (Debian: apt-get install chromium-headless-shell; or npm install @sparticuz/chromium) or set CHROMIUM_PATH, then restart.';
