import type {
  IAuthenticateGeneric,
  ICredentialTestRequest,
  ICredentialType,
  INodeProperties,
  Icon,
} from 'n8n-workflow';

/** What the Paperlink nodes do between them: every scope an API key can have (webhooks, for the trigger, need admin). */
const NODE_SCOPES = [
  'generate',
  'documents:read',
  'documents:write',
  'links:read',
  'links:write',
  'templates:read',
  'templates:write',
  'postcards:read',
  'admin',
];

/** A Paperlink service and one of its API keys, sent as X-Service-API-Token. */
export class PaperlinkApi implements ICredentialType {
  name = 'paperlinkApi';

  displayName = 'Paperlink API';

  icon: Icon = { light: 'file:paperlink.svg', dark: 'file:paperlink.dark.svg' };

  documentationUrl = 'https://github.com/paperlink/n8n-nodes-paperlink/blob/main/docs/n8n/credentials.md';

  properties: INodeProperties[] = [
    {
      displayName: 'Base URL',
      name: 'baseUrl',
      type: 'string',
      default: 'http://localhost:3000',
      placeholder: 'https://docs.example.com',
      description: 'Where the Paperlink service answers (its PUBLIC_URL)',
      required: true,
    },
    {
      displayName: 'API Key',
      name: 'apiKey',
      type: 'string',
      typeOptions: { password: true },
      default: '',
      description: 'A key from `paperlink keys create` (starts with plk_)',
      required: true,
    },
  ];

  authenticate: IAuthenticateGeneric = {
    type: 'generic',
    properties: {
      headers: { 'X-Service-API-Token': '={{$credentials.apiKey}}' },
    },
  };

  // Test: the key is live and has every scope the Paperlink nodes use (the service answers 403
  // insufficient_scope naming those it lacks); the same list as SCOPES in the service's src/keys
  test: ICredentialTestRequest = {
    request: {
      baseURL: '={{$credentials.baseUrl.replace(/\\/+$/, "")}}',
      url: '/v1/key',
      qs: { require: NODE_SCOPES.join(',') },
    },
  };
}
