import { Link, PageHeader } from '../components.js';
import { usePlace, useTitle } from '../context.js';

export function NotFoundPage() {
  const place = usePlace();
  useTitle('Not found');
  return (
    <>
      <PageHeader title="Page not found" />
      <p>
        There is no page at <code>{place.path}</code>. <Link to="/">Go to the overview</Link>.
      </p>
    </>
  );
}
