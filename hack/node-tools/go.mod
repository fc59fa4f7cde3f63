module configmap-mirror.local/node-tools

go 1.22
