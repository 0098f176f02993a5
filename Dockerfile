# Daybook in one container: SQLite in the /data volume by default, or set
# DAYBOOK_DATABASE_URL=postgresql://... The steps are the README's steps.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    DAYBOOK_HOST=0.0.0.0 DAYBOOK_PORT=5230 DAYBOOK_DATA=/data DAYBOOK_LOG_FORMAT=json

RUN useradd --create-home --uid 10001 daybook \
    && mkdir -p /data /opt/daybook && chown daybook:daybook /data /opt/daybook
WORKDIR /opt/daybook
COPY --chown=daybook:daybook . .
USER daybook
RUN python3 -m venv .venv && .venv/bin/pip install --no-cache-dir .

VOLUME ["/data"]
EXPOSE 5230
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s \
    CMD python3 -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:5230/readyz').status == 200 else 1)"
# exec form: uvicorn receives SIGTERM directly and finishes requests in flight.
CMD [".venv/bin/daybook", "serve"]
