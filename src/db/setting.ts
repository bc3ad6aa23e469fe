/**
 * One JSON value of the settings table, as an app's settings are kept (the Magic Link app, the
 * storage app): read at every request that needs it, so kept for a few seconds (other processes'
 * changes show within that), and changed by compare-and-set on what is stored (update()), never
 * from the kept copy, so two processes changing different fields at once both keep their change.
 */
import { ConflictError } from '../errors';
import type { Db } from './index';

/** How often update() reads again after another process changed the value under it. */
const UPDATE_TRIES = 20;

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

  /**
   * Changes the value: `change` gets what is stored now (read afresh) and returns the new value,
   * written only if the stored text is still what it read; otherwise it reads again and runs
   * `change` again. What `change` throws (a validation error) leaves the value as it was.
   */
  async update(change: (current: T | undefined) => T): Promise<T> {
    for (let i = 0; i < UPDATE_TRIES; i++) {
      const row = await this.db.selectFrom('settings').select('value').where('key', '=', this.key).executeTakeFirst();
      const next = change(row ? (JSON.parse(row.value) as T) : undefined);
      const json = JSON.stringify(next);
      const taken = row
        ? Number(
            (
              await this.db
                .updateTable('settings')
                .set({ value: json })
                .where('key', '=', this.key)
                .where('value', '=', row.value)
                .executeTakeFirst()
            ).numUpdatedRows,
          )
        : Number(
            (
              await this.db
                .insertInto('settings')
                .values({ key: this.key, value: json })
                .onConflict((c) => c.column('key').doNothing())
                .executeTakeFirst()
            ).numInsertedOrUpdatedRows ?? 0,
          );
      this.cached = undefined;
      if (taken > 0) return next;
    }
    throw new ConflictError(
      'settings_busy',
      `The ${this.key} settings were changed by others ${UPDATE_TRIES} times while this change was made. Send it again.`,
    );
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
