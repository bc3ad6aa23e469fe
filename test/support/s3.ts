/**
 * The test run's S3-compatible server (s3proxy, started by test/setup/servers.ts): a bucket of
 * one's own per test, made on it.
 */
import { randomBytes } from 'node:crypto';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type { S3Settings } from '../../src/storage';

const endpoint = process.env.PAPERLINK_TEST_S3;
/** Why there is no S3 server in this run (its jars never fetched); undefined when there is one. */
export const S3_MISSING = endpoint
  ? undefined
  : (process.env.PAPERLINK_TEST_S3_MISSING ?? 'PAPERLINK_TEST_S3 is not set');

/** A new empty bucket; documents go under the prefix `docs/`, as an operator sharing a bucket would set. */
export async function freshBucket(): Promise<S3Settings> {
  if (!endpoint) throw new Error(`no S3 server: ${S3_MISSING}`);
  const settings = {
    bucket: `paperlink-${randomBytes(6).toString('hex')}`,
    prefix: 'docs/',
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
  };
  const client = new S3Client({ region: settings.region, endpoint, forcePathStyle: true });
  try {
    await client.send(new CreateBucketCommand({ Bucket: settings.bucket }));
  } finally {
    client.destroy();
  }
  return settings;
}
