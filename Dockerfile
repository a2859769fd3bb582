# syntax=docker/dockerfile:1
# Two stages (the Miniflux pattern): Go builds a static binary, then a
# distroless image runs it as an unprivileged user. Migrations and the OpenAPI
# document are embedded in the binary, so it is the only file needed.
#
#   docker build -t emi .
#   docker run --rm -p 8080:8080 -e DATABASE_URL=... -e EMI_MASTER_KEY=... emi
#   docker run --rm -e DATABASE_URL=... -e EMI_MASTER_KEY=... emi migrate

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/emi ./cmd/emi

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/emi /emi
ENV EMI_ADDR=:8080
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/emi"]
CMD ["serve"]
