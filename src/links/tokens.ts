/**
 * A link's URL token: derived from the server's link key and the link's generation, so a retried
 * send e-mails the same URL and a resend (a new generation) stops the old one. The key lives in
 * the settings table (made on first use, shared by every process on the database); the links'
 * table holds only each token's hash.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../db';
import { derivedToken } from '../secrets';

const TOKEN_KEY = 'link_token_key';

export class LinkTokens {
  constructor(private readonly db: Db) {}

  /** The server's link key (settings `link_token_key`, made on first use, shared by every process on the database). */
  private async tokenKey(): Promise<Buffer> {
    this.key ??= (async () => {
      const read = async () =>
        (await this.db.selectFrom('settings').select('value').where('key', '=', TOKEN_KEY).executeTakeFirst())?.value;
      let value = await read();
      if (!value) {
        await this.db
          .insertInto('settings')
          .values({ key: TOKEN_KEY, value: randomBytes(32).toString('base64') })
          .onConflict((c) => c.column('key').doNothing())
          .execute();
        value = (await read())!;
      }
      return Buffer.from(value, 'base64');
    })();
    this.key.catch(() => (this.key = undefined));
    return this.key;
  }
  private key?: Promise<Buffer>;

  /** The URL token of a link's generation: the same every time it is made, so a retried send e-mails the same URL. */
  async token(id: string, generation: number): Promise<string> {
    return derivedToken(await this.tokenKey(), `${id}.${generation}`);
  }
}
