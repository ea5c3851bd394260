# A FROM scratch image of the static binary: nothing to pull, builds offline.
# Build the binary first: `make image` does both.
FROM scratch
COPY bin/termgate /termgate
ENV TERMGATE_STATE_DIR=/state
VOLUME /state
EXPOSE 2222 8080
ENTRYPOINT ["/termgate"]
