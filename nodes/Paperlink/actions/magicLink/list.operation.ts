import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { listAll } from '../../transport';
import { listFields } from '../common';

const show = { resource: ['magicLink'], operation: ['list'] };

export const description: INodeProperties[] = [
  ...listFields(show),
  {
    displayName: 'Filters',
    name: 'filters',
    type: 'collection',
    placeholder: 'Add Filter',
    default: {},
    displayOptions: { show },
    options: [
      { displayName: 'Document ID', name: 'document_id', type: 'string', default: '', placeholder: 'doc_…', description: 'Only the links of this document' },
      { displayName: 'Recipient Email', name: 'recipient_email', type: 'string', default: '', placeholder: 'name@email.com', description: 'Only the links sent to this address' },
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
    ],
  },
];

/** Links newest first, with their status, views used and left and expiry. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
  const limit = this.getNodeParameter('returnAll', i, false) ? undefined : Number(this.getNodeParameter('limit', i, 50));
  const filters = Object.fromEntries(Object.entries(this.getNodeParameter('filters', i, {}) as IDataObject).filter(([, v]) => String(v ?? '').trim() !== '').map(([k, v]) => [k, String(v).trim()]));
  return (await listAll.call(this, '/v1/magic_links', limit, filters)).map((json) => ({ json, pairedItem: { item: i } }));
}
