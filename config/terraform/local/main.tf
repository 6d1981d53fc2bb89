# Node agents on this machine, one process per node, started and stopped by Terraform itself:
# the whole `terraform` platform path without a cloud account. Each node gets a stable loopback
# address from its id (127.64.0.0/10 holds four million), so that serverAddress tells nodes apart.
#
# agent, node_binary and state_dir are paths and a program on the control plane's machine:
# Switchyard sets them (or the operator pins them), never a node group. Every other input is data.

terraform {
  required_version = ">= 1.5.0"
}

variable "nodes" {
  type        = map(object({ role = string, region = string }))
  description = "The nodes of this region, by node id."
}

variable "tokens" {
  type        = map(string)
  sensitive   = true
  description = "Bootstrap node tokens, by node id."
}

variable "service_url" {
  type = string
}

variable "group" {
  type = string
}

variable "region" {
  type = string
}

variable "agent" {
  type        = string
  description = "Absolute path of the node agent: dist/src/agent/main.js of a built Switchyard."
}

variable "node_binary" {
  type        = string
  default     = "node"
  description = "The Node.js that runs the agent."
}

variable "state_dir" {
  type        = string
  description = "Absolute path of a directory for each node's pid file and log."
}

variable "network" {
  type    = string
  default = "127.64.0.0/10"
}

variable "port" {
  type    = number
  default = 0
}

variable "scope" {
  type    = string
  default = "live"
}

locals {
  addresses = { for id, n in var.nodes : id => cidrhost(var.network, parseint(substr(sha1(id), 0, 5), 16) + 2) }
}

resource "terraform_data" "node" {
  for_each = var.nodes

  input = {
    address = local.addresses[each.key]
    dir     = "${var.state_dir}/${var.group}/${each.key}"
  }

  # Every value reaches the shell through the environment and is used as a quoted variable
  # ("$NODE_DIR"), never pasted into the command: the command is constant text.
  provisioner "local-exec" {
    # The agent gets none of the credentials of Switchyard's state backend (cluster mode), which
    # Terraform's environment holds and local-exec passes on.
    command = <<-EOT
      unset TF_HTTP_USERNAME TF_HTTP_PASSWORD
      mkdir -p "$SWITCHYARD_NODE_DIR"
      setsid nohup "$NODE_BINARY" "$NODE_AGENT" --node-id "$SWITCHYARD_NODE_ID" >>"$SWITCHYARD_NODE_DIR/agent.log" 2>&1 </dev/null &
      echo $! >"$SWITCHYARD_NODE_DIR/agent.pid"
    EOT
    environment = {
      NODE_BINARY             = var.node_binary
      NODE_AGENT              = var.agent
      SWITCHYARD_URL          = var.service_url
      SWITCHYARD_NODE_ID      = each.key
      SWITCHYARD_NODE_TOKEN   = var.tokens[each.key]
      SWITCHYARD_NODE_ROLE    = each.value.role
      SWITCHYARD_NODE_SCOPE   = var.scope
      SWITCHYARD_NODE_ADDRESS = local.addresses[each.key]
      SWITCHYARD_NODE_PORT    = tostring(var.port)
      SWITCHYARD_NODE_DIR     = self.input.dir
    }
  }

  provisioner "local-exec" {
    when    = destroy
    command = "kill \"$(cat \"$NODE_DIR/agent.pid\")\" 2>/dev/null; rm -rf \"$NODE_DIR\""
    environment = {
      NODE_DIR = self.input.dir
    }
  }
}

output "nodes" {
  value = { for id, n in terraform_data.node : id => { public = n.input.address, private = n.input.address } }
}
