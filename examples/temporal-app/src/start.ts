// Starts a contract from your code and waits for its outcome: node dist/start.js <order id> <e-mail>
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { loadConfig } from 'paperlink';
import { connectClient, requestError } from 'paperlink/workflows/client';
import type { sendContract } from './workflows';

async function main() {
  const [orderId = 'order-1', customerEmail = 'ada@example.com'] = process.argv.slice(2);
  // TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, TLS, TEMPORAL_PAYLOAD_KEYS
  const { temporal } = loadConfig();
  const client = await connectClient(temporal);
  // one contract per order: a second start finds the first, running or completed
  const workflowId = `contract-${orderId}`;
  const handle = await client.workflow
    .start<typeof sendContract>('sendContract', {
      taskQueue: temporal.taskQueue,
      workflowId,
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      args: [{ orderId, customerName: 'Ada Lovelace', customerEmail }],
    })
    .catch((err: unknown) => {
      if (err instanceof WorkflowExecutionAlreadyStartedError)
        return client.workflow.getHandle<typeof sendContract>(workflowId);
      throw err;
    });
  console.log(`started ${handle.workflowId}; waiting until the link is viewed or expires (a minute)`);
  console.log(`outcome: ${await handle.result()}`);
  await client.connection.close();
}

main().catch((err) => {
  // a request Paperlink refused (a missing merge parameter, an unknown template) says which and why
  const refused = requestError(err);
  console.error(refused ? `error (${refused.code}): ${refused.message} ${JSON.stringify(refused.details ?? [])}` : err);
  process.exit(1);
});
