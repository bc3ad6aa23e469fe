import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { downloadPdf } from '../../transport';
import { idOf, locator } from '../common';

const show = { resource: ['document'], operation: ['download'] };

export const description: INodeProperties[] = [
  locator('document', show),
  {
    displayName: 'Put Output File in Field',
    name: 'binaryPropertyName',
    type: 'string',
    default: 'data',
    required: true,
    hint: 'The name of the output binary field to put the PDF in',
    displayOptions: { show },
  },
];

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const { document, binary } = await downloadPdf.call(this, idOf(this, 'document', i));
  return {
    json: document,
    binary: { [String(this.getNodeParameter('binaryPropertyName', i, 'data'))]: binary },
    pairedItem: { item: i },
  };
}
