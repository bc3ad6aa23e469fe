import { fieldErrors, formLabel, formMessage } from '../../src/web/forms';

describe('web forms: API error details in the form words', () => {
  it('puts a Magic Link detail on its field, in the form words', () => {
    const d = {
      field: 'destinations.magic_link.recipient_email',
      code: 'required',
      message: 'is required: the link is e-mailed there',
    };
    expect(formLabel(d.field)).toBe('Recipient Email');
    expect(formMessage(d)).toBe("Enter the recipient's e-mail address.");
    expect(fieldErrors([d]).get('recipient_email')).toBe('is required: the link is e-mailed there');
    const none = {
      field: 'destinations.magic_link',
      code: 'no_limit',
      message: 'needs a limit: expire_after_n_views, …',
    };
    expect(formLabel(none.field)).toBe('Magic Link');
    expect(formMessage(none)).toBe('Choose a limit: a number of views, a time, or both.');
  });

  it('leaves a merge field that shares a Magic Link setting name as the template names it', () => {
    const d = { field: 'merge_parameters.recipient_email', code: 'required', message: 'is required by the template' };
    // the merge field's own label (its name in words), not the link setting's "Recipient Email"
    expect(formLabel(d.field)).toBe('Recipient email');
    expect(formMessage(d)).toBe('is required by the template');
    expect([...fieldErrors([d]).keys()]).toEqual(['var:recipient_email']);
  });
});
