/** A real SMTP server in the test process that keeps every message it receives, parsed. */
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface Mailbox {
  url: string;
  messages: ParsedMail[];
  /** Refuse every message from now on (or accept again with false). */
  refuse(on: boolean): void;
  /** Resolves with the next message sent to `to` (already received ones count from `after`). */
  next(to: string, after?: number): Promise<ParsedMail>;
  /** Every message received so far for this address. */
  inbox(address: string): ParsedMail[];
  close(): Promise<void>;
}

export async function startSmtp(): Promise<Mailbox> {
  const messages: ParsedMail[] = [];
  let refusing = false;
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, done) {
      if (refusing) {
        stream.resume();
        stream.on('end', () => done(Object.assign(new Error('mailbox unavailable'), { responseCode: 550 })));
        return;
      }
      // keepCidLinks: the HTML as sent (inline images by cid:), not rewritten to data: URIs
      simpleParser(stream, { keepCidLinks: true }).then(
        (m) => {
          messages.push(m);
          for (const w of waiters.splice(0)) w();
          done();
        },
        (err: Error) => done(err),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as { port: number }).port;
  const to = (m: ParsedMail) =>
    (Array.isArray(m.to) ? m.to : m.to ? [m.to] : []).flatMap((a) => a.value.map((v) => v.address?.toLowerCase()));
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    refuse: (on) => {
      refusing = on;
    },
    inbox: (address) => messages.filter((m) => to(m).includes(address.toLowerCase())),
    next: async (address, after = 0) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const found = messages.slice(after).find((m) => to(m).includes(address.toLowerCase()));
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no e-mail to ${address} within 10 s`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The Magic Link URL in a message's text part. */
export function linkIn(m: ParsedMail): string {
  const match = /(https?:\/\/\S+\/l\/[0-9A-Za-z]+)/.exec(m.text ?? '');
  if (!match) throw new Error(`no link in: ${m.text}`);
  return match[1];
}

export function codeIn(m: ParsedMail): string {
  const match = /\b(\d{6})\b/.exec(m.text ?? '');
  if (!match) throw new Error(`no code in: ${m.text}`);
  return match[1];
}

/**
 * A mail server that holds every message whole (never answers the end of DATA, as a slow server)
 * until release(), or from take() on accepts what comes. A sender that dies while its message is
 * held never had it accepted. `received` holds the accepted messages' raw text.
 */
export async function holdingSmtp() {
  const received: string[] = [];
  const held: { text: string; done: () => void }[] = [];
  let holding = true;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, done) {
      let text = '';
      stream.on('data', (c: Buffer) => (text += c.toString()));
      stream.on('end', () => {
        const accept = () => {
          received.push(text.replace(/=\r?\n/g, ''));
          done();
        };
        if (holding) held.push({ text, done: accept });
        else accept();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as { port: number }).port}`,
    received,
    /** How many messages are held now. */
    held: () => held.length,
    /** Accepts the held messages. */
    release: () => held.splice(0).forEach((m) => m.done()),
    /** Accepts every message from now on (held ones stay held). */
    take: () => (holding = false),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
