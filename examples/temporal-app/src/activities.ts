// Your own activities, registered beside Paperlink's.
import fs from 'node:fs';

export async function recordOutcome(orderId: string, documentId: string, outcome: string): Promise<void> {
  fs.appendFileSync('outcomes.log', `${orderId} ${documentId} ${outcome}\n`);
}
