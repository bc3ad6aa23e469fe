// Your worker: your workflows and activities, and Paperlink's by its plugin. Paperlink reads its
// settings from the environment as the API does: DATABASE_URL, TEMPORAL_ADDRESS,
// TEMPORAL_TASK_QUEUE, STORAGE, SMTP_URL, …
import { NativeConnection, Worker } from '@temporalio/worker';
import { createPaperlinkPlugin } from 'paperlink/workflows/plugin';
import * as activities from './activities';

async function main() {
  const paperlink = await createPaperlinkPlugin();
  // where TEMPORAL_ADDRESS says, with its TLS and API key
  const connection = await NativeConnection.connect(paperlink.connectionOptions);
  const worker = await Worker.create({
    connection,
    namespace: paperlink.namespace,
    taskQueue: paperlink.taskQueue, // TEMPORAL_TASK_QUEUE: where Paperlink's API starts its workflows too
    workflowsPath: require.resolve('./workflows'),
    activities,
    plugins: [paperlink],
  });
  process.once('SIGTERM', () => worker.shutdown());
  process.once('SIGINT', () => worker.shutdown());
  console.log(`worker: polling task queue ${paperlink.taskQueue}`);
  await worker.run(); // Paperlink's service closes when the worker stops
  await connection.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
