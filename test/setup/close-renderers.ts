/**
 * After every suite: the browser and the LibreOffice its renders started are closed. They are
 * children of the jest worker, which runs other suites after this one; a suite that counts the
 * worker's children (test/templates/budgets.test.ts, hostile.test.ts) must not find another's.
 * Each suite has its own module registry, so these are the suite's own printer and converter.
 */
import { converter } from '../../src/templates/docx';
import { printer } from '../../src/templates/html';

afterAll(async () => {
  await printer.close();
  await converter.close();
});
