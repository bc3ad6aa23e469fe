/**
 * One JSON value of the settings table, as an app's settings are kept (the Magic Link app, the
 * storage app): read at every request that needs it, so kept for a few seconds (other processes'
 * changes show within that), and written whole.
 */
import type { Db } from './index';

/** How long a read value is kept. */
export const SETTING_CACHE_MS = 5000;

export class Setting<T> {
  private cached?: { at: number; value: T | undefined };

  constructor(
    private readonly db: Db,
    private readonly key: string,
  ) {}

  /** The stored value (undefined: never written), read again after SETTING_CACHE_MS. */
  async read(): Promise<T | undefined> {
    const now = Date.now();
    if (this.cached && now - this.cached.at < SETTING_CACHE_MS) return this.cached.value;
    const row = await this.db.selectFrom('settings').select('value').where('key', '=', this.key).executeTakeFirst();
    const value = row ? (JSON.parse(row.value) as T) : undefined;
    this.cached = { at: now, value };
    return value;
  }

  async write(value: T): Promise<void> {
    const json = JSON.stringify(value);
    await this.db
      .insertInto('settings')
      .values({ key: this.key, value: json })
      .onConflict((c) => c.column('key').doUpdateSet({ value: json }))
      .execute();
    this.cached = undefined;
  }

  /** Forgets the value read: the next read asks the database. */
  forget(): void {
    this.cached = undefined;
  }
}
