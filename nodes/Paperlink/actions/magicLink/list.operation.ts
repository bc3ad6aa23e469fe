import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { listAll } from '../../transport';
import { listFields, listFilters, listLimit } from '../common';

export const description: INodeProperties[] = listFields({ resource: ['magicLink'], operation: ['list'] }, [
  {
    displayName: 'Created After',
    name: 'created_after',
    type: 'dateTime',
    default: '',
    description: 'Only links made at or after this time (UTC when it names no zone)',
  },
  {
    displayName: 'Created Before',
    name: 'created_before',
    type: 'dateTime',
    default: '',
    description: 'Only links made before this time (UTC when it names no zone)',
  },
  {
    displayName: 'Document ID',
    name: 'document_id',
    type: 'string',
    default: '',
    placeholder: 'doc_…',
    description: 'Only the links of this document',
  },
  {
    displayName: 'Recipient Email',
    name: 'recipient_email',
    type: 'string',
    default: '',
    placeholder: 'name@email.com',
    description: 'Only the links sent to this address',
  },
  {
    displayName: 'Status',
    name: 'status',
    type: 'options',
    default: 'active',
    options: [
      { name: 'Active', value: 'active' },
      { name: 'Expired', value: 'expired' },
      { name: 'Revoked', value: 'revoked' },
      { name: 'Send Failed', value: 'send_failed' },
    ],
  },
]);

/** Links newest first, with their status, views used and left and expiry. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
  return (await listAll.call(this, '/v1/magic_links', listLimit(this, i), listFilters(this, i))).map((json) => ({
    json,
    pairedItem: { item: i },
  }));
}
