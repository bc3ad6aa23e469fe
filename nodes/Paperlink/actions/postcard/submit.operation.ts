import {
  NodeOperationError,
  type IDataObject,
  type IExecuteFunctions,
  type INodeExecutionData,
  type INodeProperties,
} from 'n8n-workflow';
import { checkPostcard, mergeValues } from '../../../../src/postcards/rules';
import { apiError, apiRequest } from '../../transport';
import { idOf, locator, pathOf } from '../common';
import { text } from '../../text';

const show = { resource: ['postcard'], operation: ['submit'] };
const textField = (displayName: string, name: string, extra: Partial<INodeProperties> = {}): INodeProperties => ({
  displayName,
  name,
  type: 'string',
  default: '',
  displayOptions: { show },
  ...extra,
});

export const description: INodeProperties[] = [
  locator('template', show, 'The postcard template; the request is checked against its merge fields before it is sent'),
  textField('First Name', 'firstName', { description: 'First or last name is required' }),
  textField('Last Name', 'lastName'),
  textField('Address Line 1', 'addressLine1', { required: true, description: 'At most 64 characters' }),
  textField('Address Line 2', 'addressLine2'),
  textField('City', 'addressCity', { required: true }),
  textField('State', 'addressState', {
    required: true,
    placeholder: 'OR',
    description: 'Two letters; a US state or territory when the country is US',
  }),
  textField('ZIP', 'addressZip', { required: true }),
  textField('Country', 'addressCountry', { required: true, placeholder: 'US', description: 'ISO 3166-1 alpha-2 code' }),
  {
    displayName: 'Contact',
    name: 'contact',
    type: 'collection',
    placeholder: 'Add Field',
    default: {},
    displayOptions: { show },
    options: [
      { displayName: 'Company', name: 'company', type: 'string', default: '' },
      { displayName: 'Email', name: 'email', type: 'string', placeholder: 'name@email.com', default: '' },
      { displayName: 'Phone', name: 'phone', type: 'string', default: '' },
      {
        displayName: 'Source',
        name: 'source',
        type: 'string',
        default: '',
        description: 'Where the request came from, e.g. a campaign',
      },
    ],
  },
  {
    displayName: 'Custom Data',
    name: 'customData',
    type: 'fixedCollection',
    typeOptions: { multipleValues: true },
    placeholder: 'Add Field',
    default: {},
    description: 'Any other fields: stored with the request, and they fill merge fields of the same name',
    displayOptions: { show },
    options: [
      {
        displayName: 'Field',
        name: 'field',
        values: [
          { displayName: 'Name', name: 'name', type: 'string', default: '' },
          { displayName: 'Value', name: 'value', type: 'string', default: '' },
        ],
      },
    ],
  },
];

/**
 * Posts a postcard request to the intake (token in the body); the answer is `{ id, status: 'received' }`.
 * Before sending, the request is checked with the service's own rules and against the template's
 * merge fields, so a request that could only fail later is refused here, with every field to fix.
 */
export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData> {
  const { intakeUrl } = await this.getCredentials<{ intakeUrl: string }>('paperlinkPostcardTokenApi');
  const p = (name: string) => text(this.getNodeParameter(name, i, '')).trim();
  const body: IDataObject = {};
  for (const { name, value } of (
    this.getNodeParameter('customData', i, {}) as { field?: { name: string; value: string }[] }
  ).field ?? []) {
    if (name.trim()) body[name.trim()] = value;
  }
  const fields = {
    template_id: idOf(this, 'template', i),
    first_name: p('firstName'),
    last_name: p('lastName'),
    address_line_1: p('addressLine1'),
    address_line_2: p('addressLine2'),
    address_city: p('addressCity'),
    address_state: p('addressState'),
    address_zip: p('addressZip'),
    address_country: p('addressCountry'),
  };
  for (const [k, v] of Object.entries({ ...fields, ...(this.getNodeParameter('contact', i, {}) as IDataObject) }))
    if (String(v ?? '').trim()) body[k] = String(v).trim();

  const refuse = (message: string, details: { field: string; message: string }[]) =>
    new NodeOperationError(this.getNode(), message, {
      itemIndex: i,
      description: details.map((d) => `${d.field}: ${d.message}`).join('; '),
    });
  // the credential adds the real token when sending; the rules only need one to be there
  const checked = checkPostcard({ ...body, api_token: 'checked-when-sent' });
  if (!checked.ok) throw refuse('The postcard request is not valid; see the fields to fix', checked.details);
  const template = (await apiRequest.call(this, 'GET', pathOf('template', checked.value.template_id))) as {
    variables?: string[];
    optional_variables?: { name: string }[];
  };
  const values = mergeValues(checked.value);
  // the optional ones (with a default in the template) may be left out
  const optional = new Set((template.optional_variables ?? []).map((v) => v.name));
  const missing = (template.variables ?? []).filter((v) => values[v] === undefined && !optional.has(v));
  if (missing.length) {
    throw refuse(
      `The template needs ${missing.join(', ')}: give ${missing.length === 1 ? 'it' : 'them'} as contact fields or Custom Data`,
      missing.map((field) => ({ field, message: 'is required by the template' })),
    );
  }
  try {
    // the credential's authenticate block adds api_token to the body
    const answer = (await this.helpers.httpRequestWithAuthentication.call(this, 'paperlinkPostcardTokenApi', {
      method: 'POST',
      url: intakeUrl,
      body,
      json: true,
    })) as IDataObject;
    return { json: answer, pairedItem: { item: i } };
  } catch (err) {
    throw apiError(this, err);
  }
}
