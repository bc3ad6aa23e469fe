import type {
  IAuthenticateGeneric,
  ICredentialTestRequest,
  ICredentialType,
  INodeProperties,
  Icon,
} from 'n8n-workflow';

/**
 * A postcard token (`paperlink tokens create --kind postcard`). The Postcard Submit operation sends
 * it in the body to the service's intake; the Postcard Intake Trigger checks incoming requests
 * against it.
 */
export class PaperlinkPostcardTokenApi implements ICredentialType {
  name = 'paperlinkPostcardTokenApi';

  displayName = 'Paperlink Postcard Token API';

  icon: Icon = { light: 'file:paperlink.svg', dark: 'file:paperlink.dark.svg' };

  documentationUrl = 'https://github.com/paperlink/n8n-nodes-paperlink/blob/main/docs/n8n/credentials.md';

  properties: INodeProperties[] = [
    {
      displayName: 'Token',
      name: 'token',
      type: 'string',
      typeOptions: { password: true },
      default: '',
      description: 'The postcard token (starts with plp_); it travels in the body field api_token',
      required: true,
    },
    {
      displayName: 'Intake URL',
      name: 'intakeUrl',
      type: 'string',
      default: 'http://localhost:3000/postcards',
      description:
        'The service URL and its POSTCARD_PATH: where Postcard Submit posts requests, and where the credential test and the Postcard Intake Trigger check the token',
    },
  ];

  /** The token travels in the JSON body, never in a header (spec 4.2). */
  authenticate: IAuthenticateGeneric = {
    type: 'generic',
    properties: { body: { api_token: '={{$credentials.token}}' } },
  };

  /** The intake's token check (`POST <intake>/token`): 200 for a live postcard token, 401 otherwise; no postcard is made. */
  test: ICredentialTestRequest = {
    request: {
      method: 'POST',
      url: '={{$credentials.intakeUrl.replace(/\\/+$/, "")}}/token',
      headers: { 'content-type': 'application/json' },
      body: {},
    },
  };
}
