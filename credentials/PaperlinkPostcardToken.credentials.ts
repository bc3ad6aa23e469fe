import type { IAuthenticateGeneric, ICredentialType, INodeProperties, Icon } from 'n8n-workflow';

// The token cannot be checked without submitting a postcard (the intake only answers requests
// that make one), so this credential has no test request; a wrong token shows as a 401 on the
// first Submit, with the service's message.
/**
 * A postcard token (`paperlink tokens create --kind postcard`). The Postcard Submit operation sends
 * it in the body to the service's intake; the Postcard Intake Trigger checks incoming requests
 * against it.
 */
// eslint-disable-next-line @n8n/community-nodes/credential-test-required
export class PaperlinkPostcardToken implements ICredentialType {
  name = 'paperlinkPostcardToken';

  displayName = 'Paperlink Postcard Token';

  icon: Icon = { light: 'file:paperlink.svg', dark: 'file:paperlink.dark.svg' };

  documentationUrl = 'https://github.com/paperlink/n8n-nodes-paperlink#n8n';

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
        'Where Postcard Submit posts requests (the service URL and its POSTCARD_PATH). Not used by the Postcard Intake Trigger.',
    },
  ];

  /** The token travels in the JSON body, never in a header (spec 4.2). */
  authenticate: IAuthenticateGeneric = {
    type: 'generic',
    properties: { body: { api_token: '={{$credentials.token}}' } },
  };
}
