import {
  NodeOperationError,
  type IDataObject,
  type IExecuteFunctions,
  type INodeExecutionData,
  type INodeProperties,
} from 'n8n-workflow';
import { apiRequest } from '../../transport';
import { text } from '../../text';

const show = { resource: ['template'], operation: ['create'] };

export const description: INodeProperties[] = [
  {
    displayName: 'Input Binary Field',
    name: 'binaryPropertyName',
    type: 'string',
    default: 'data',
    required: true,
    hint: 'The binary field holding the template: an XML or HTML template, a Word .docx, or a fillable PDF',
    displayOptions: { show },
  },
  {
    displayName: 'Name',
    name: 'name',
    type: 'string',
    default: '',
    description: 'Name of the template; empty: the file name',
    displayOptions: { show },
  },
  {
    displayName: 'Assets',
    name: 'assets',
    type: 'fixedCollection',
    typeOptions: { multipleValues: true },
    placeholder: 'Add Asset',
    default: {},
    description:
      'The images, fonts and CSS an XML or HTML template names (e.g. &lt;image src="images/logo.png"/&gt;), each from a binary field',
    displayOptions: { show },
    options: [
      {
        displayName: 'Asset',
        name: 'asset',
        values: [
          {
            displayName: 'Input Binary Field',
            name: 'binaryPropertyName',
            type: 'string',
            default: 'logo',
            description: 'The binary field holding the file',
          },
          {
            displayName: 'Path in Template',
            name: 'path',
            type: 'string',
            default: '',
            placeholder: 'images/logo.png',
            description: 'The path the template names it by; empty: the file name',
          },
        ],
      },
    ],
  },
];

/** Uploads the template (and its assets) as JSON with base64 bytes; the service answers with the template and its variables. */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const field = String(this.getNodeParameter('binaryPropertyName', i, 'data'));
  const file = this.helpers.assertBinaryData(i, field);
  const source = await this.helpers.getBinaryDataBuffer(i, field);
  const assets: IDataObject = {};
  for (const asset of (
    this.getNodeParameter('assets', i, {}) as { asset?: { binaryPropertyName: string; path: string }[] }
  ).asset ?? []) {
    const binary = this.helpers.assertBinaryData(i, asset.binaryPropertyName);
    const path = asset.path.trim() || binary.fileName;
    if (!path)
      throw new NodeOperationError(
        this.getNode(),
        `Give the path the template names the file of "${asset.binaryPropertyName}" by: it has no file name`,
        { itemIndex: i },
      );
    assets[path] = (await this.helpers.getBinaryDataBuffer(i, asset.binaryPropertyName)).toString('base64');
  }
  const name =
    text(this.getNodeParameter('name', i, '')).trim() || (file.fileName ?? '').replace(/\.[^.]+$/, '') || undefined;
  const body: IDataObject = {
    source_base64: source.toString('base64'),
    ...(name ? { name } : {}),
    ...(Object.keys(assets).length ? { assets } : {}),
  };
  return { json: (await apiRequest.call(this, 'POST', '/v1/templates', body)) as IDataObject, pairedItem: { item: i } };
}
