// Your workflows module: Paperlink's workflows re-exported beside your own (a worker has one).
import { proxyActivities } from '@temporalio/workflow';
import { awaitLink, executeGenerate } from 'paperlink/workflows/children';
import type * as activities from './activities';

export * from 'paperlink/workflows/workflows';

const { recordOutcome } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute' });

export interface Contract {
  orderId: string;
  customerName: string;
  customerEmail: string;
}

/**
 * Generates the contract (Paperlink's `generate`, as a child), shares it by a Magic Link the
 * customer gets by e-mail, waits until they view it or it expires, and records what happened.
 */
export async function sendContract(contract: Contract): Promise<string> {
  const render = await executeGenerate({
    // names the render: a retry or replay of this workflow finds the same document and link
    idempotencyKey: `contract-${contract.orderId}`,
    body: {
      template_id: 'tmpl_example_letter',
      merge_parameters: {
        date: new Date().toISOString().slice(0, 10), // the workflow's time: replays see the same
        recipient_name: contract.customerName,
        recipient_title: 'Customer',
        recipient_address: contract.customerEmail,
        subject: `Your rental contract, order ${contract.orderId}`,
        salutation: contract.customerName,
        body: 'Your rental contract is ready. Open the link in this e-mail to read it; reply with any question.',
        sender_name: 'Acme Rentals',
        sender_title: 'Contracts',
        enclosure: 'Rental contract',
      },
      destinations: {
        inkit_storage: { name: `Contract ${contract.orderId}` },
        magic_link: { recipient_email: contract.customerEmail, retain_from_created: { minutes: 1 } },
      },
    },
  });
  const link = await awaitLink(render.magic_link_piece_id!, 'viewed', { everyMs: 5_000 });
  const outcome = (link.views ?? 0) > 0 ? 'viewed' : link.status;
  await recordOutcome(contract.orderId, render.document_id, outcome);
  return outcome;
}
