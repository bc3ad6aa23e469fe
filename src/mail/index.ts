/**
 * Outgoing e-mail through nodemailer: over SMTP when SMTP_URL is set, otherwise each message is
 * written to DATA_DIR/outbox as an .eml file (open it with any mail program), so the embedded
 * default works with no mail server.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Log } from '../log';
import { emails } from '../metrics';
import { inSpan } from '../tracing';

export interface Message {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** Who it is from; MAIL_FROM when left out. */
  from?: { name: string; address: string };
  replyTo?: string;
  /** Images the HTML shows by `cid:` (mail programs block data: URIs). */
  inline?: { cid: string; filename: string; contentType: string; content: Buffer }[];
}

/** The message as nodemailer takes it: MAIL_FROM unless the message names its sender. */
function envelope(from: string, m: Message) {
  const { inline, ...rest } = m;
  return {
    ...rest,
    from: m.from ?? from,
    ...(inline?.length ? { attachments: inline.map((a) => ({ ...a, contentDisposition: 'inline' as const })) } : {}),
  };
}

export interface Sent {
  messageId: string;
  /** The .eml file, when written to the outbox. */
  file?: string;
}

export interface Mailer {
  /** Where mail goes, for people: `smtp://host:port` or the outbox folder. */
  readonly destination: string;
  send(message: Message): Promise<Sent>;
  /** Throws, saying why, when no mail could be sent now (the SMTP server refuses a sign-in, the outbox cannot be written). */
  check(): Promise<void>;
  close(): void;
}

type MailerOptions = { smtpUrl?: string; from: string; outbox: string; log?: Log };

export function createMailer(options: MailerOptions): Mailer {
  const mailer = transportOf(options);
  // counted for operators (src/metrics.ts) and traced (src/tracing.ts; no address in a span)
  return {
    ...mailer,
    send: (m) =>
      inSpan('paperlink.email', { 'paperlink.mail_server': mailer.destination }, () =>
        mailer.send(m).then(
          (sent) => (emails.inc({ outcome: 'sent' }), sent),
          (err: unknown) => (emails.inc({ outcome: 'failed' }), Promise.reject(err)),
        ),
      ),
  };
}

function transportOf(options: MailerOptions): Mailer {
  if (options.smtpUrl) {
    const url = new URL(options.smtpUrl);
    // every wait bounded well inside a link's send lease (SEND_LEASE_MS, two minutes): a send that
    // hangs fails, and is retried, rather than outliving its lease and being sent twice
    const transport: Transporter = nodemailer.createTransport({
      url: options.smtpUrl,
      connectionTimeout: 30_000,
      greetingTimeout: 30_000,
      socketTimeout: 60_000,
    });
    return {
      destination: `${url.protocol}//${url.host}`,
      send: async (m) => {
        const info = (await transport.sendMail(envelope(options.from, m))) as { messageId?: unknown };
        return { messageId: typeof info.messageId === 'string' ? info.messageId : '' };
      },
      // connects, says hello and signs in, as a send would, and sends nothing
      check: async () => void (await transport.verify()),
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    destination: options.outbox,
    send: async (m) => {
      const info = await transport.sendMail(envelope(options.from, m));
      await fs.mkdir(options.outbox, { recursive: true });
      const id = String(info.messageId).replace(/[^A-Za-z0-9@._-]/g, '');
      const file = path.join(options.outbox, `${new Date().toISOString().replace(/[:.]/g, '-')}-${id}.eml`);
      await fs.writeFile(file, info.message as Buffer);
      options.log?.(`E-mail to ${m.to} ("${m.subject.replace(/\d{6}/g, '******')}") written to ${file}`);
      return { messageId: String(info.messageId), file };
    },
    check: async () => {
      await fs.mkdir(options.outbox, { recursive: true });
      await fs.access(options.outbox, fs.constants.W_OK);
    },
    close: () => transport.close(),
  };
}
