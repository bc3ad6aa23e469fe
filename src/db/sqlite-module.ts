/**
 * Which better-sqlite3 this Node.js loads. Version 12 is built on Node's own `ObjectWrap`, and on
 * Node 24.19 and later (addons built against their headers) a statement freed by the garbage
 * collector aborts the process ("Assertion failed: (env) != nullptr" in
 * RemoveEnvironmentCleanupHook, nodejs/node#65446). Version 13 uses Node-API and runs on Node 22
 * and later, but crashes on Node 20. So both are installed (13 as `better-sqlite3`, prebuilt; 12 as
 * the alias `better-sqlite3-12`, built from source) and each Node loads the one that runs on it.
 */
import type SQLiteType from 'better-sqlite3';

/** The package name for this Node.js: `better-sqlite3` (13) on Node 22 and later, `better-sqlite3-12` before. */
export const sqliteModuleName =
  Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3' : 'better-sqlite3-12';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const SQLite = require(sqliteModuleName) as typeof SQLiteType;
export default SQLite;
