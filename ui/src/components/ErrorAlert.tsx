import {messageOf} from '../api';

/**
 * The live region errors are announced in: always present (so a screen reader hears the text when
 * it appears), empty when there is none. The message is a text node, never markup.
 */
export function ErrorAlert({error}: {error: unknown}) {
  const text = error === null || error === undefined || error === '' ? '' : typeof error === 'string' ? error : messageOf(error);
  return (
    <div role="alert" className={text ? 'error' : 'error empty'}>
      {text}
    </div>
  );
}
