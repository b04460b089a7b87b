# GoRunner's image: a static binary on an empty root, run as a user without privileges,
# its data (secret.key, admin-token, the SQLite file by default) in the /data volume.
#   docker build -t gorunner .
#   docker run -p 8080:8080 -v gorunner-data:/data gorunner
# deploy/compose.yaml runs two processes on PostgreSQL (deploy/compose.redis.yaml: Redis).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static: no cgo (SQLite is modernc's pure-Go port), so the binary needs no libc and runs
# on the empty root below. deploy's test runs this very line.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/gorunner ./cmd/gorunner
RUN mkdir -p /out/data

FROM scratch
# HTTP steps and OAuth reach HTTPS servers: the build stage's CA roots.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/gorunner /gorunner
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV GORUNNER_DATA=/data
VOLUME /data
EXPOSE 8080
# No curl on an empty root: the binary checks /healthz itself.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["/gorunner", "health"]
ENTRYPOINT ["/gorunner"]
CMD ["serve", "--addr", "0.0.0.0:8080"]
