/**
 * veraPDF, the PDF Association's validator (scripts/verapdf-install.sh keeps its jars in
 * ~/.cache): validates PDFs against the standards they claim in their XMP metadata (its automatic
 * flavour detection, so a file that claims PDF/A and PDF/UA is checked against both). One JVM
 * checks every file given at once. Where the jars were never fetched the tests that need it are
 * skipped, saying why; CI sets PAPERLINK_REQUIRE_VERAPDF=1, and there that fails the run.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const VERSION = process.env.VERAPDF_VERSION ?? '1.28.2';
const lib = path.join(os.homedir(), '.cache', 'paperlink-verapdf', VERSION, 'lib');

/** Why veraPDF cannot run here, or undefined when it can. */
export const verapdfMissing: string | undefined = fs.existsSync(path.join(lib, '..', '.complete'))
  ? undefined
  : `veraPDF ${VERSION} is not in ${path.dirname(lib)}: run bash scripts/verapdf-install.sh (Maven and Java 17)`;

if (verapdfMissing && process.env.PAPERLINK_REQUIRE_VERAPDF === '1')
  throw new Error(`veraPDF is required here (PAPERLINK_REQUIRE_VERAPDF=1): ${verapdfMissing}`);

/** One standard a file was checked against: veraPDF's profile name, and each rule it failed. */
export interface Verdict {
  /** e.g. "PDF/A-2B validation profile", "PDF/UA-1 validation profile". */
  profile: string;
  compliant: boolean;
  failed: { rule: string; checks: number; description: string }[];
}

interface Report {
  report: {
    jobs: {
      itemDetails: { name: string };
      validationResult?: Raw | Raw[];
      taskException?: unknown;
    }[];
  };
}
interface Raw {
  profileName: string;
  compliant: boolean;
  details: { ruleSummaries: { clause: string; testNumber: number; failedChecks: number; description: string }[] };
}

/** Validates the PDFs (name → bytes); each name's verdicts, one per standard the file claims. */
export async function validate(files: Record<string, Uint8Array>): Promise<Record<string, Verdict[]>> {
  if (verapdfMissing) throw new Error(verapdfMissing);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verapdf-'));
  try {
    const paths = Object.entries(files).map(([name, pdf]) => {
      const file = path.join(dir, `${Object.keys(files).indexOf(name)}.pdf`);
      fs.writeFileSync(file, pdf);
      return [file, name] as const;
    });
    const out = await new Promise<string>((resolve, reject) => {
      const java = spawn(
        'java',
        ['-cp', `${lib}/*`, 'org.verapdf.apps.GreenfieldCliWrapper', '--format', 'json', ...paths.map(([f]) => f)],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      java.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      java.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      java.on('error', reject);
      // exit 1 means some file is not compliant: the report says which
      java.on('close', (code) => (code === 0 || code === 1 ? resolve(stdout) : reject(new Error(stderr))));
    });
    const report = JSON.parse(out) as Report;
    const byFile = new Map(paths);
    const verdicts: Record<string, Verdict[]> = {};
    for (const job of report.report.jobs) {
      const name = byFile.get(job.itemDetails.name)!;
      if (!job.validationResult)
        throw new Error(`veraPDF could not check ${name}: ${JSON.stringify(job.taskException)}`);
      verdicts[name] = [job.validationResult].flat().map((r) => ({
        profile: r.profileName,
        compliant: r.compliant,
        failed: r.details.ruleSummaries.map((s) => ({
          rule: `${s.clause}-${s.testNumber}`,
          checks: s.failedChecks,
          description: s.description,
        })),
      }));
    }
    return verdicts;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
