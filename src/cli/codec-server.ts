/**
 * `paperlink codec-server`: Temporal's codec-server protocol, so that its UI and CLI show Paperlink's
 * encrypted payloads. The server and the codec are workflows/codec.ts.
 */
import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../config';
import { EXIT_OK, type Io, type SetExit } from './shared';

export function addCodecServerCommand(program: Command, io: Io, setExit: SetExit): void {
  program
    .command('codec-server')
    .description(
      "Serve Temporal's codec-server protocol (POST /encode, /decode) with the keys of TEMPORAL_PAYLOAD_KEYS, so that Temporal's UI and CLI show Paperlink's encrypted payloads. It decrypts whatever it is given: keep it where only the people allowed to read them reach it.",
    )
    .option('-p, --port <port>', 'port to listen on', '8888')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--origin <url>', "the Temporal UI's origin, allowed by CORS (e.g. http://localhost:8233)")
    .option(
      '--allow-host <list>',
      'comma-separated host:port names it is reached by besides its address (others are refused)',
    )
    .addHelpText(
      'after',
      '\nEnvironment: TEMPORAL_PAYLOAD_KEYS (k2:<base64>,k1:<base64>; required). In the UI: Settings, Data Encoder, this address. With the CLI: temporal workflow show --codec-endpoint http://127.0.0.1:8888. See docs/temporal.md, "Encrypted payloads".',
    )
    .action(async (opts: { port: string; host: string; origin?: string; allowHost?: string }) => {
      const config = loadConfig(process.env);
      const { codecServer, payloadCodec } = await import('../../workflows/codec');
      const codec = payloadCodec(config.temporal);
      if (!codec)
        throw new ConfigError(
          'TEMPORAL_PAYLOAD_KEYS is not set: there is nothing to decode. Give it the keys your workers encrypt with.',
        );
      const server = codecServer(
        codec,
        opts.origin,
        (opts.allowHost ?? '')
          .split(',')
          .map((h) => h.trim())
          .filter(Boolean),
      );
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(Number(opts.port), opts.host, resolve);
      });
      io.stderr(`paperlink codec-server: listening on http://${opts.host}:${opts.port}\n`);
      await new Promise<void>((resolve) => {
        const stop = () => server.close(() => resolve());
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      setExit(EXIT_OK);
    });
}
