/**
 * Mustang's Factur-X / ZUGFeRD validator (scripts/mustang-install.sh keeps its jars in ~/.cache),
 * run through test/support/java/FacturxCheck.java: the PDF/A-3 file, its XMP properties and the
 * embedded invoice's XML against its schema and the EN 16931 business rules. Where the jars were
 * never fetched the tests that need it are skipped, saying why; CI sets PAPERLINK_REQUIRE_VERAPDF=1,
 * which requires this validator too.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const VERSION = process.env.MUSTANG_VERSION ?? '2.25.0';
const lib = path.join(os.homedir(), '.cache', 'paperlink-mustang', VERSION, 'lib');

/** Why the validator cannot run here, or undefined when it can. */
export const mustangMissing: string | undefined = fs.existsSync(path.join(lib, '..', '.complete'))
  ? undefined
  : `Mustang's validator ${VERSION} is not in ${path.dirname(lib)}: run bash scripts/mustang-install.sh (Maven and Java 17)`;

if (mustangMissing && process.env.PAPERLINK_REQUIRE_VERAPDF === '1')
  throw new Error(`Mustang's validator is required here (PAPERLINK_REQUIRE_VERAPDF=1): ${mustangMissing}`);

/** The validator's verdict on one PDF, and its report (XML) to show when it is not valid. */
export interface FacturxVerdict {
  valid: boolean;
  report: string;
}

export async function checkFacturx(pdf: Uint8Array): Promise<FacturxVerdict> {
  if (mustangMissing) throw new Error(mustangMissing);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'facturx-'));
  try {
    const file = path.join(dir, 'invoice.pdf');
    fs.writeFileSync(file, pdf);
    const out = await new Promise<string>((resolve, reject) => {
      const java = spawn('java', ['-cp', `${lib}/*`, path.join(__dirname, 'java', 'FacturxCheck.java'), file], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      java.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      java.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      java.on('error', reject);
      java.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(stderr))));
    });
    const verdict = /^VALID (true|false)$/m.exec(out);
    if (!verdict) throw new Error(`the validator gave no verdict:\n${out}`);
    return { valid: verdict[1] === 'true', report: out.slice(0, verdict.index) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
